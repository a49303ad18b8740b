package app_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"harness/client"
	"harness/internal/config"
	"harness/internal/session"
)

// gitHTTPServer serves a bare repository with one commit over git's dumb
// HTTP protocol (update-server-info and a file server).
func gitHTTPServer(t *testing.T) *httptest.Server {
	t.Helper()
	dir := t.TempDir()
	gitRun := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	work := filepath.Join(dir, "work")
	gitRun("init", "-q", "-b", "main", work)
	if err := os.WriteFile(filepath.Join(work, "README"), []byte("cloned-through-the-proxy\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitRun("-C", work, "add", "README")
	gitRun("-C", work, "commit", "-q", "-m", "first")
	gitRun("clone", "-q", "--bare", work, filepath.Join(dir, "repo.git"))
	gitRun("-C", filepath.Join(dir, "repo.git"), "update-server-info")
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	return srv
}

// TestEgressAttacks: in a session an admin turned network-on, as a user
// who is not an admin, through the real driver, shell and sandbox, the
// host's services are out of reach: PostgreSQL, Redis and NATS on
// loopback and the server's own port, by the proxy (curl, which follows
// HTTP_PROXY) and directly (bash's /dev/tcp, psql, redis-cli: the sandbox
// has no host network). The proxy's refusals are noted in the session's
// log and counted in /metrics. An allow-listed local HTTP server is
// reached with curl, and a git clone of an allow-listed local repository
// works, both through the proxy.
func TestEgressAttacks(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "allow-listed-site") }))
	t.Cleanup(site.Close)
	git := gitHTTPServer(t)
	hostPort := func(u string) string { return strings.TrimPrefix(u, "http://") }
	a := attackAppWith(t, func(c *config.Config) {
		c.FetchHosts = []string{hostPort(site.URL), hostPort(git.URL)}
	})
	ctx := t.Context()
	bob := a.User(t, "bob", false)
	s, err := bob.Client.CreateSession(ctx, client.NewSession{Mode: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Store.SetNetwork(ctx, s.ID, true); err != nil { // the admin's switch
		t.Fatal(err)
	}
	port := hostPort(a.URL)[len("127.0.0.1:"):]

	out := runAs(t, a, bob, s.ID, `env | grep -c '^HTTPS_PROXY=http://127.0.0.1:'
for p in 5432 6379 4222 `+port+`; do curl -sS --max-time 20 http://127.0.0.1:$p/; echo " [curl $p: $?]"; done
curl -sS --max-time 20 https://127.0.0.1:5432/; echo " [curl https 5432: $?]"
for p in 5432 6379 4222 `+port+`; do (exec 3<>/dev/tcp/127.0.0.1/$p && echo "tcp $p open" && head -c 64 <&3); done
psql -h 127.0.0.1 -U postgres -d test -Atc "select 'pg-' || 'reached'" 2>&1 | head -2
redis-cli -h 127.0.0.1 ping 2>&1 | head -2`)
	for _, s := range []string{"open", "pg-reached", "PONG", "INFO", "200 OK", "<html"} {
		if strings.Contains(out, s) {
			t.Errorf("a host service answered (%q):\n%s", s, out)
		}
	}
	if !hasLine(out, "1") || strings.Count(out, "harness: network: refused to connect") != 4 ||
		!strings.Contains(out, "belongs to this server") || !strings.Contains(out, "is a loopback address") {
		t.Errorf("the proxy variables are not set, or the refusals do not say why:\n%s", out)
	}

	// Refusals are events of the session's log, one per destination, and
	// counted in /metrics.
	want := map[string]string{"5432": "loopback", "6379": "loopback", "4222": "loopback", port: "server"}
	got := map[string]string{}
	for _, ev := range allEvents(t, bob.Client, s.ID) {
		if ev.Type != string(session.TypeNetworkRefused) {
			continue
		}
		var n session.NetworkRefused
		if err := json.Unmarshal(ev.Data, &n); err != nil {
			t.Fatal(err)
		}
		if n.Host != "127.0.0.1" || n.Address != fmt.Sprintf("127.0.0.1:%d", n.Port) {
			t.Errorf("refusal %+v", n)
		}
		if _, dup := got[fmt.Sprint(n.Port)]; dup {
			t.Errorf("port %d noted twice within a minute", n.Port)
		}
		got[fmt.Sprint(n.Port)] = n.Reason
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("refusals noted %v, want %v", got, want)
	}
	res, err := http.Get(a.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, m := range []string{`harness_egress_refused_total{reason="loopback"} 4`, `harness_egress_refused_total{reason="server"} 1`} {
		if !strings.Contains(string(metrics), m) {
			t.Errorf("/metrics lacks %s", m)
		}
	}

	// The allow-listed site and repository, through the proxy.
	out = runAs(t, a, bob, s.ID, `curl -sS --max-time 20 `+site.URL+`/; echo
git clone -q `+git.URL+`/repo.git cloned && cat cloned/README`)
	if !strings.Contains(out, "allow-listed-site") || !strings.Contains(out, "cloned-through-the-proxy") {
		t.Errorf("the allow-listed site or repository was not reached:\n%s", out)
	}
	res, err = http.Get(a.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if strings.Contains(string(metrics), "harness_egress_allowed_total 0\n") {
		t.Error("/metrics counts no allowed connection")
	}
}
