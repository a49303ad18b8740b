package web

import (
	"net/http"
	"strings"
	"testing"
)

// A remote scraper reads /metrics with the metrics token and no session;
// a wrong token is refused with 401 (never the login page), whoever asks
// and from wherever; the token never reaches the log.
func TestMetricsToken(t *testing.T) {
	t.Parallel()
	const token = "metrics-token-0123456789abcdef"
	metrics := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("harness_up 1\n"))
	})
	env := newScenarioEnv(t, scenarioOptions{Deps: func(env *scenarioEnv, d *Deps) {
		d.Metrics = metrics
		d.MetricsToken = token
	}})
	for _, tc := range []struct {
		name   string
		auth   string
		accept string
		proxy  bool // a forwarding header: not a direct loopback client
		want   int
	}{
		{"right token via proxy", "Bearer " + token, "", true, 200},
		{"right token, lower-case scheme", "bearer " + token, "", true, 200},
		{"right token from loopback", "Bearer " + token, "", false, 200},
		{"wrong token via proxy", "Bearer " + token + "x", "", true, 401},
		{"wrong token from a browser", "Bearer nope", "text/html", true, 401},
		// A bearer is checked even where none is needed.
		{"wrong token from loopback", "Bearer " + token[:len(token)-1], "", false, 401},
		{"no token via proxy", "", "", true, 401},
		{"no token via proxy, Prometheus' Accept", "", "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5", true, 401},
		{"no token via proxy, a browser", "", "text/html,*/*", true, 303},
		{"no token from loopback", "", "", false, 200},
	} {
		req, _ := http.NewRequest(http.MethodGet, env.URL+"/metrics", nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		if tc.accept != "" {
			req.Header.Set("Accept", tc.accept)
		}
		if tc.proxy {
			req.Header.Set("X-Forwarded-For", "203.0.113.9")
		}
		res, body := env.do(t, req)
		if res.StatusCode != tc.want {
			t.Errorf("%s: status %d, want %d (%s)", tc.name, res.StatusCode, tc.want, body)
			continue
		}
		if got := strings.Contains(body, "harness_up 1"); got != (tc.want == 200) {
			t.Errorf("%s: metrics in the body %v, want %v", tc.name, got, tc.want == 200)
		}
		if tc.want == 401 && !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: 401 without a Bearer challenge", tc.name)
		}
	}
	logs := env.Logs.String()
	if !strings.Contains(logs, "path=/metrics") {
		t.Fatalf("the request log has no /metrics line: the check below would prove nothing\n%s", logs)
	}
	if strings.Contains(logs, token[:12]) || strings.Contains(logs, "nope") {
		t.Fatalf("a metrics token reached the log:\n%s", logs)
	}
}

// Without a configured token every bearer is wrong: it cannot open
// /metrics by being empty.
func TestMetricsTokenUnset(t *testing.T) {
	t.Parallel()
	env := newScenarioEnv(t, scenarioOptions{Deps: func(env *scenarioEnv, d *Deps) {
		d.Metrics = http.NotFoundHandler()
	}})
	for _, auth := range []string{"Bearer ", "Bearer x"} {
		req, _ := http.NewRequest(http.MethodGet, env.URL+"/metrics", nil)
		req.Header.Set("Authorization", auth)
		req.Header.Set("X-Forwarded-For", "203.0.113.9")
		if res, _ := env.do(t, req); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("%q: status %d, want 401", auth, res.StatusCode)
		}
	}
}
