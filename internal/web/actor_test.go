package web

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/labstack/echo/v4"
)

func TestActorResolution(t *testing.T) {
	t.Parallel()
	env := newScenarioEnv(t, scenarioOptions{})
	cookie, _ := env.login(t, actorOwner)
	tests := []struct {
		name, path, accept string
		cookie, bearer     string
		wantCode           int
		wantLocation       string // for redirects
		wantErrCode        string // for JSON errors
		wantName           string // for /api/me
	}{
		{"bearer on the API", "/api/me", "", "", env.tokens[actorViewer], 200, "", "", "viewer"},
		{"bearer wins over the cookie", "/api/me", "", cookie, env.tokens[actorViewer], 200, "", "", "viewer"},
		{"a bad bearer is never downgraded to the cookie", "/api/me", "", cookie, env.tokens[actorBadToken], 401, "", "unauthorized", ""},
		{"cookie on the API", "/api/me", "", cookie, "", 200, "", "", "owner"},
		{"anonymous API", "/api/me", "", "", "", 401, "", "unauthorized", ""},
		{"tokens are for the API only", "/", "", "", env.tokens[actorViewer], 303, "/login?next=%2F", "", ""},
		{"anonymous page", "/?tab=x", "", "", "", 303, "/login?next=%2F%3Ftab%3Dx", "", ""},
		{"anonymous JSON client", "/", "application/json", "", "", 401, "", "unauthorized", ""},
		{"forged cookie", "/", "", "AAAA", "", 303, "/login?next=%2F", "", ""},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(http.MethodGet, env.URL+tt.path, nil)
		if tt.accept != "" {
			req.Header.Set("Accept", tt.accept)
		}
		if tt.cookie != "" {
			req.AddCookie(&http.Cookie{Name: sessionCookie, Value: tt.cookie})
		}
		if tt.bearer != "" {
			req.Header.Set("Authorization", "Bearer "+tt.bearer)
		}
		res, body := env.do(t, req)
		if res.StatusCode != tt.wantCode || res.Header.Get("Location") != tt.wantLocation {
			t.Errorf("%s: %d to %q, want %d to %q", tt.name, res.StatusCode, res.Header.Get("Location"), tt.wantCode, tt.wantLocation)
			continue
		}
		var out struct {
			User  struct{ Name string } `json:"user"`
			Error struct{ Code string } `json:"error"`
		}
		if tt.wantErrCode != "" || tt.wantName != "" {
			if err := json.Unmarshal([]byte(body), &out); err != nil {
				t.Errorf("%s: body %q: %v", tt.name, body, err)
				continue
			}
		}
		if out.Error.Code != tt.wantErrCode || out.User.Name != tt.wantName {
			t.Errorf("%s: body %s", tt.name, body)
		}
	}
}

// TestGuardScenarios runs the guards on stand-in routes through the
// scenario harness.
func TestGuardScenarios(t *testing.T) {
	t.Parallel()
	env := newScenarioEnv(t, scenarioOptions{Routes: func(_ *scenarioEnv, s *Server) {
		ok := func(c echo.Context) error { return c.String(http.StatusOK, "ok") }
		s.e.GET("/test/admin", ok, s.RequireAdmin)
		s.e.GET("/api/test/admin", ok, s.RequireAdmin)
		s.e.GET("/api/test/actor", ok, s.RequireActor)
	}})
	runScenarios(t, env, []scenarioRow{
		{Name: "admin page", Method: http.MethodGet, Path: "/test/admin", Want: expect(303, only(403, userActors...), only(200, actorAdmin))},
		{Name: "admin API", Method: http.MethodGet, Path: "/api/test/admin", Auth: viaBearer, Want: expect(401, only(403, userActors...), only(200, actorAdmin))},
		// Share actors are resolved only on /ws (and /s/ pages), so an API
		// route sees them as anonymous.
		{Name: "any actor", Method: http.MethodGet, Path: "/api/test/actor", Want: expect(401, only(200, userActors...))},
	})
}
