package web

import (
	"net/http"
	"strings"
	"testing"
)

// direct sends the row's request straight from the loopback client, without
// the forwarding header the harness adds to spread rate limits.
func direct(t *testing.T, env *scenarioEnv, req *http.Request) (int, string) {
	req.Header.Del("X-Forwarded-For")
	res, body := env.do(t, req)
	return res.StatusCode, body
}

// viaProxy sends the row's request as if a reverse proxy forwarded it from
// a remote client.
func viaProxy(t *testing.T, env *scenarioEnv, req *http.Request) (int, string) {
	req.Header.Set("X-Forwarded-For", "203.0.113.9")
	res, body := env.do(t, req)
	return res.StatusCode, body
}

// browserViaProxy is viaProxy with a browser's Accept header.
func browserViaProxy(t *testing.T, env *scenarioEnv, req *http.Request) (int, string) {
	req.Header.Set("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")
	return viaProxy(t, env, req)
}

func TestOpsScenarios(t *testing.T) {
	t.Parallel()
	metrics := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("harness_up 1\n"))
	})
	env := newScenarioEnv(t, scenarioOptions{Deps: func(env *scenarioEnv, d *Deps) { d.Metrics = metrics }})
	users := []scenarioActor{actorOwner, actorCollaborator, actorViewer, actorOther}
	runScenarios(t, env, []scenarioRow{
		// A local Prometheus scrapes without an account.
		{Name: "GET /metrics from loopback", Method: http.MethodGet, Path: "/metrics", Send: direct, Want: expect(200)},
		// Through a proxy only admins may; an anonymous scraper (no
		// text/html in Accept) is told 401, a browser is sent to log in.
		{Name: "GET /metrics via proxy", Method: http.MethodGet, Path: "/metrics", Send: viaProxy,
			Want: expect(401, only(200, actorAdmin), only(403, users...))},
		{Name: "GET /metrics via proxy from a browser", Method: http.MethodGet, Path: "/metrics", Send: browserViaProxy,
			Want: expect(303, only(200, actorAdmin), only(403, users...))},
		{Name: "GET /debug/pprof/", Method: http.MethodGet, Path: "/debug/pprof/",
			Want: expect(303, only(200, actorAdmin), only(403, users...))},
		{Name: "GET /debug/pprof/goroutine", Method: http.MethodGet, Path: "/debug/pprof/goroutine",
			Want: expect(303, only(200, actorAdmin), only(403, users...))},
	})
}

// Every response carries a request id; a sane one from a proxy is kept, a
// hostile one replaced; request log lines name it.
func TestRequestIDs(t *testing.T) {
	t.Parallel()
	env := newScenarioEnv(t, scenarioOptions{})
	for _, tc := range []struct{ sent, want string }{
		{"", ""},
		{"proxy-id-42", "proxy-id-42"},
		{"evil\" level=ERROR", ""},
	} {
		req, _ := http.NewRequest(http.MethodGet, env.URL+"/healthz", nil)
		if tc.sent != "" {
			req.Header.Set("X-Request-Id", tc.sent)
		}
		res, _ := env.do(t, req)
		got := res.Header.Get("X-Request-Id")
		if got == "" || tc.want != "" && got != tc.want || tc.want == "" && got == tc.sent {
			t.Fatalf("sent %q, got request id %q", tc.sent, got)
		}
	}
}

// Share tokens and setup tokens never reach the request log.
func TestRequestLogRedactsSecretPaths(t *testing.T) {
	t.Parallel()
	env := newScenarioEnv(t, scenarioOptions{})
	for _, p := range []string{"/s/" + env.shares[actorShare], "/setup/some-setup-token"} {
		req, _ := http.NewRequest(http.MethodGet, env.URL+p, nil)
		env.do(t, req)
	}
	logs := env.Logs.String()
	if strings.Contains(logs, env.shares[actorShare]) || strings.Contains(logs, "some-setup-token") {
		t.Fatalf("a secret path reached the log:\n%s", logs)
	}
}
