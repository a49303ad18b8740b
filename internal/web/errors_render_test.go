package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"harness/internal/auth"
	"harness/internal/driver"
	"harness/internal/models"
	"harness/internal/service"
)

// Errors come back as the error page for browsers and as coded JSON for the
// API, the WebSocket upgrade and JSON clients.
func TestErrorRendering(t *testing.T) {
	t.Parallel()
	env := newScenarioEnv(t, scenarioOptions{})
	cases := []struct {
		path, accept string
		wantStatus   int
		wantType     string
		wantBody     string
	}{
		{"/no-such-page", "text/html", 404, "text/html", "<title>Not found"},
		{"/api/no-such-route", "", 404, "application/json", `"code":"not_found"`},
		{"/no-such-page", "application/json", 404, "application/json", `"code":"not_found"`},
		{"/ws", "", 404, "application/json", `"code":"not_found"`}, // no hub in this server
	}
	for _, tc := range cases {
		req, _ := http.NewRequest(http.MethodGet, env.URL+tc.path, nil)
		if tc.accept != "" {
			req.Header.Set("Accept", tc.accept)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != tc.wantStatus || !strings.HasPrefix(res.Header.Get("Content-Type"), tc.wantType) || !strings.Contains(string(body), tc.wantBody) {
			t.Errorf("%s (Accept %q): %d %s %q", tc.path, tc.accept, res.StatusCode, res.Header.Get("Content-Type"), body)
		}
	}
}

// TestBareErrorsAnswerTheirCode: a handler returns whatever error it got,
// unwrapped; the error handler gives a service error its code's status, a
// domain error (auth, store, driver) its code through service.AsError,
// echo's errors the code of their status, and anything else a safe 500.
func TestBareErrorsAnswerTheirCode(t *testing.T) {
	t.Parallel()
	leak := "secret cause 1234"
	errs := map[string]error{
		"service":         service.Errorf(service.CodeNotPending, "nothing is pending"),
		"service-wrapped": fmt.Errorf("approve: %w", service.Errorf(service.CodeOpenTurn, "inside a turn")),
		"auth-forbidden":  fmt.Errorf("%s: %w", leak, auth.ErrForbidden),
		"auth-rate":       &auth.RateLimitError{RetryAfter: time.Minute},
		"auth-last-admin": fmt.Errorf("%s: %w", leak, auth.ErrLastAdmin),
		"store-not-found": fmt.Errorf("%s: %w", leak, models.ErrNotFound),
		"driver-busy":     fmt.Errorf("%s: %w", leak, driver.ErrBusy),
		"echo-405":        echo.NewHTTPError(http.StatusMethodNotAllowed, "method not allowed"),
		"echo-429":        echo.NewHTTPError(http.StatusTooManyRequests),
		"csrf":            service.NewError(service.CodeCSRF, "missing or invalid CSRF token"),
		"plain":           errors.New(leak),
		// The owner of a moving session may be dead: it is never named.
		"not-owner": &driver.NotOwnerError{Session: "s1", Owner: leak, Addr: "10.0.0.9:8080"},
	}
	env := newScenarioEnv(t, scenarioOptions{Routes: func(_ *scenarioEnv, s *Server) {
		s.e.GET("/api/test/fail/:kind", func(c echo.Context) error { return errs[c.Param("kind")] })
		s.e.GET("/test/fail/:kind", func(c echo.Context) error { return errs[c.Param("kind")] })
	}})
	tests := []struct {
		kind    string
		status  int
		code    service.Code
		message string
	}{
		{"service", 409, service.CodeNotPending, "nothing is pending"},
		{"service-wrapped", 409, service.CodeOpenTurn, "inside a turn"},
		{"auth-forbidden", 403, service.CodeForbidden, "not allowed"},
		{"auth-rate", 429, service.CodeRateLimited, "too many attempts"},
		{"auth-last-admin", 409, service.CodeConflict, "that would leave no enabled admin"},
		{"store-not-found", 404, service.CodeNotFound, "not found"},
		{"driver-busy", 409, service.CodeBusy, "the agent is busy"},
		{"echo-405", 405, service.CodeBadRequest, "method not allowed"},
		{"echo-429", 429, service.CodeRateLimited, "Too Many Requests"},
		{"csrf", 403, service.CodeCSRF, "missing or invalid CSRF token"},
		{"plain", 500, service.CodeInternal, "internal error"},
		{"not-owner", 503, service.CodeUnavailable, "the session is moving to another replica; send the same request again in a moment"},
	}
	for _, tt := range tests {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, env.URL+"/api/test/fail/"+tt.kind, nil)
		res, body := env.do(t, req)
		var got struct {
			Error service.Error `json:"error"`
		}
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Errorf("%s: %d %q: %v", tt.kind, res.StatusCode, body, err)
			continue
		}
		if res.StatusCode != tt.status || got.Error.Code != tt.code || got.Error.Message != tt.message || strings.Contains(body, leak) {
			t.Errorf("%s: %d %s, want %d {%s %q}", tt.kind, res.StatusCode, body, tt.status, tt.code, tt.message)
		}
		if tt.kind == "not-owner" && (res.Header.Get("Retry-After") != "1" || got.Error.RetryAfter != 1 || strings.Contains(body, "10.0.0.9")) {
			t.Errorf("%s: Retry-After %q, retryAfter %d, body %s: want 1, 1 and no address", tt.kind, res.Header.Get("Retry-After"), got.Error.RetryAfter, body)
		}
		// A browser gets the error page with the same status (a message
		// that only names the status is its heading, in sentence case).
		req, _ = http.NewRequestWithContext(t.Context(), http.MethodGet, env.URL+"/test/fail/"+tt.kind, nil)
		req.Header.Set("Accept", "text/html")
		res, body = env.do(t, req)
		if res.StatusCode != tt.status || !strings.Contains(strings.ToLower(body), strings.ToLower(html.EscapeString(tt.message))) || strings.Contains(body, leak) {
			t.Errorf("%s page: %d %q, want %d with %q", tt.kind, res.StatusCode, body, tt.status, tt.message)
		}
	}
	if !strings.Contains(env.Logs.String(), leak) {
		t.Error("the cause of a 500 was not logged")
	}
}

// TestErrorPageSaysItOnce: the page of an unknown address says "Not found"
// once (heading) with a message that does not repeat it; a message that
// already names the status is the heading; other messages stay below the
// status in words.
func TestErrorPageSaysItOnce(t *testing.T) {
	t.Parallel()
	env := newScenarioEnv(t, scenarioOptions{Routes: func(_ *scenarioEnv, s *Server) {
		s.e.GET("/test/gone", func(echo.Context) error { return service.Errorf(service.CodeNotFound, "Turn 9 not found") })
		s.e.GET("/test/busy", func(echo.Context) error { return service.Errorf(service.CodeBusy, "the agent is busy") })
	}})
	tests := []struct {
		path, heading, message string
		status                 int
	}{
		{"/no-such-page", "Not found", "There is no page at this address.", 404},
		{"/test/gone", "Turn 9 not found", "", 404},
		{"/test/busy", "Conflict", "the agent is busy", 409},
	}
	for _, tt := range tests {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, env.URL+tt.path, nil)
		req.Header.Set("Accept", "text/html")
		res, body := env.do(t, req)
		main := body[strings.Index(body, "<main"):]
		if res.StatusCode != tt.status || !strings.Contains(main, "<h1>"+tt.heading+"</h1>") {
			t.Errorf("%s: %d, want %d with heading %q: %s", tt.path, res.StatusCode, tt.status, tt.heading, main)
		}
		if tt.status == 404 {
			if n := strings.Count(strings.ToLower(main), "not found"); n != 1 {
				t.Errorf("%s: the page says \"not found\" %d times: %s", tt.path, n, main)
			}
		}
		hasSub := strings.Contains(main, `class="sub"`)
		if hasSub != (tt.message != "") || tt.message != "" && !strings.Contains(main, html.EscapeString(tt.message)) {
			t.Errorf("%s: message %q: %s", tt.path, tt.message, main)
		}
	}
}
