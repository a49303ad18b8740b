package web

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
)

// echoRoute is a state-changing API route for CSRF tests.
func echoRoute(_ *scenarioEnv, s *Server) {
	s.e.POST("/api/test/echo", func(c echo.Context) error { return c.NoContent(http.StatusNoContent) }, s.RequireUser)
}

func TestCSRF(t *testing.T) {
	t.Parallel()
	env := newScenarioEnv(t, scenarioOptions{Routes: echoRoute})
	_, otherCSRF := env.login(t, actorViewer)
	tests := []struct {
		name     string
		path     string
		bearer   bool   // authenticate with an API token instead of the cookie
		header   string // X-CSRF-Token: "ok" = the session's token
		form     string // _csrf form field: "ok" = the session's token
		wantCode int
		wantErr  string
	}{
		{"api: missing", "/api/test/echo", false, "", "", 403, "csrf"},
		{"api: wrong header", "/api/test/echo", false, "not-the-token", "", 403, "csrf"},
		{"api: another session's token", "/api/test/echo", false, otherCSRF, "", 403, "csrf"},
		{"api: header", "/api/test/echo", false, "ok", "", 204, ""},
		{"api: form field", "/api/test/echo", false, "", "ok", 204, ""},
		{"api: bearer needs none", "/api/test/echo", true, "", "", 204, ""},
		{"page: missing", "/logout", false, "", "", 403, ""},
		{"page: wrong form field", "/logout", false, "", "nope", 403, ""},
		{"page: form field", "/logout", false, "", "ok", 303, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cookie, csrf := env.login(t, actorOwner)
			tok := func(v string) string {
				if v == "ok" {
					return csrf
				}
				return v
			}
			form := url.Values{}
			if tt.form != "" {
				form.Set("_csrf", tok(tt.form))
			}
			req, _ := http.NewRequest(http.MethodPost, env.URL+tt.path, strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if tt.bearer {
				req.Header.Set("Authorization", "Bearer "+env.tokens[actorOwner])
			} else {
				req.AddCookie(&http.Cookie{Name: sessionCookie, Value: cookie})
			}
			if tt.header != "" {
				req.Header.Set("X-CSRF-Token", tok(tt.header))
			}
			res, body := env.do(t, req)
			if res.StatusCode != tt.wantCode {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tt.wantCode, body)
			}
			if tt.wantErr != "" {
				var e struct {
					Error struct{ Code string } `json:"error"`
				}
				if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Code != tt.wantErr {
					t.Fatalf("body %s: want error code %q", body, tt.wantErr)
				}
			}
			// A refused logout leaves the login session alive.
			if tt.path == "/logout" && tt.wantCode == 403 {
				if _, _, err := env.Auth.Session(t.Context(), cookie); err != nil {
					t.Fatalf("refused logout ended the session: %v", err)
				}
			}
		})
	}
}

// TestLoginFormCSRF: the anonymous login form needs its double-submit token.
func TestLoginFormCSRF(t *testing.T) {
	t.Parallel()
	env := newScenarioEnv(t, scenarioOptions{})
	good := strings.Repeat("k", preLoginLen)
	tests := []struct {
		name, cookie, field string
		want                int
	}{
		{"both match", good, good, 303},
		{"no cookie", "", good, 403},
		{"no field", good, "", 403},
		{"mismatch", good, strings.Repeat("j", preLoginLen), 403},
	}
	for _, tt := range tests {
		form := url.Values{"name": {"owner"}, "password": {password(actorOwner)}}
		if tt.field != "" {
			form.Set("_csrf", tt.field)
		}
		req, _ := http.NewRequest(http.MethodPost, env.URL+"/login", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if tt.cookie != "" {
			req.AddCookie(&http.Cookie{Name: preLoginCookie, Value: tt.cookie})
		}
		res, _ := env.do(t, req)
		if res.StatusCode != tt.want {
			t.Errorf("%s: status %d, want %d", tt.name, res.StatusCode, tt.want)
		}
		if got := cookieNamed(res, sessionCookie) != nil; got != (tt.want == 303) {
			t.Errorf("%s: session cookie set = %v", tt.name, got)
		}
	}
}

func cookieNamed(res *http.Response, name string) *http.Cookie {
	for _, c := range res.Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}
