package web

import (
	"net/http"
	"testing"
)

// rebound sends the row's request from the loopback client, as a browser
// on this machine would for a page whose DNS name was rebound to
// 127.0.0.1: no forwarding headers, but that name as Host.
func rebound(host string) func(t *testing.T, env *scenarioEnv, req *http.Request) (int, string) {
	return func(t *testing.T, env *scenarioEnv, req *http.Request) (int, string) {
		req.Header.Del("X-Forwarded-For")
		req.Host = host
		res, body := env.do(t, req)
		return res.StatusCode, body
	}
}

// /metrics skips authentication only for a loopback client that also
// names this machine in Host; any other Host needs an admin (DNS
// rebinding). The rows send no Accept: an anonymous client is told 401
// (a browser's page load is sent to log in: ops_scenario_test.go).
func TestMetricsLoopbackNeedsLoopbackHost(t *testing.T) {
	t.Parallel()
	metrics := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("harness_up 1\n"))
	})
	env := newScenarioEnv(t, scenarioOptions{Deps: func(env *scenarioEnv, d *Deps) { d.Metrics = metrics }})
	users := []scenarioActor{actorOwner, actorCollaborator, actorViewer, actorOther}
	var rows []scenarioRow
	for _, host := range []string{"127.0.0.1:8080", "localhost:8080", "LOCALHOST", "[::1]:8080", "127.0.0.2"} {
		rows = append(rows, scenarioRow{Name: "GET /metrics, Host " + host, Method: http.MethodGet, Path: "/metrics",
			Send: rebound(host), Want: expect(200)})
	}
	for _, host := range []string{"evil.example:8080", "evil.example", "localhost.evil.example", "127.0.0.1.nip.io:8080", "10.0.0.1"} {
		rows = append(rows, scenarioRow{Name: "GET /metrics, Host " + host, Method: http.MethodGet, Path: "/metrics",
			Send: rebound(host), Want: expect(401, only(200, actorAdmin), only(403, users...))})
	}
	runScenarios(t, env, rows)
}
