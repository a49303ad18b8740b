package web

import (
	"io"
	"net/http"
	"strings"
	"testing"
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
		{"/no-such-page", "text/html", 404, "text/html", "<title>Not Found"},
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
