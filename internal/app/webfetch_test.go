package app_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"harness/client"
	"harness/internal/app"
	"harness/internal/config"
	"harness/internal/llm/fake"
	"harness/internal/session"
	"harness/internal/testkit"
	"harness/internal/testkit/apptest"
	"harness/internal/testkit/poll"
)

// fetchAs asks the demo model to call web_fetch on url in the user's
// session and returns the text of the call's result.
func fetchAs(t *testing.T, u apptest.User, sessionID, url string) string {
	t.Helper()
	before := turnEnds(t, u.Client, sessionID)
	if _, err := u.Client.SendMessage(t.Context(), sessionID, `call: web_fetch {"url": "`+url+`"}`, ""); err != nil {
		t.Fatalf("send: %v", err)
	}
	poll.Eventually(t, "the turn to end", func() bool { return turnEnds(t, u.Client, sessionID) != before },
		poll.Within(60*time.Second), poll.Every(20*time.Millisecond))
	out := ""
	for _, ev := range allEvents(t, u.Client, sessionID) {
		if ev.Type != "tool/result" {
			continue
		}
		var r session.ToolResult
		if err := json.Unmarshal(ev.Data, &r); err != nil {
			t.Fatal(err)
		}
		out = toolText(r)
	}
	return out
}

// web_fetch runs in the server process: even with every loopback port
// allow-listed (HARNESS_FETCH_HOSTS) and the network on, it never reaches
// the server's own listener, by address or by name, while another loopback
// site on the list is fetched.
func TestWebFetchNeverReachesTheServer(t *testing.T) {
	t.Parallel()
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<h1>Internal docs</h1>")
	}))
	t.Cleanup(site.Close)
	a := apptest.StartApp(t, func(c *config.Config) {
		c.FetchHosts = []string{"127.0.0.1", "localhost"}
	}, app.Options{DemoOptions: []fake.Option{fake.WithChunkDelay(0)}})
	alice := a.User(t, "alice", false)
	s, err := alice.Client.CreateSession(t.Context(), client.NewSession{Mode: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Store.SetNetwork(t.Context(), s.ID, true); err != nil {
		t.Fatal(err)
	}

	if out := fetchAs(t, alice, s.ID, site.URL); !strings.Contains(out, "# Internal docs") {
		t.Fatalf("allow-listed site: %q", out)
	}
	port := a.URL[strings.LastIndex(a.URL, ":")+1:]
	for _, u := range []string{a.URL + "/api/sessions", "http://localhost:" + port + "/login", "http://[::1]:" + port + "/"} {
		out := fetchAs(t, alice, s.ID, u)
		if !strings.Contains(out, "refused") || strings.Contains(out, "Status: ") {
			t.Errorf("%s: %q", u, out)
		}
		if u == a.URL+"/api/sessions" && !strings.Contains(out, "belongs to this server") {
			t.Errorf("%s: %q does not say why", u, out)
		}
	}
}

// A bad HARNESS_FETCH_HOSTS entry stops the start with a clear error.
func TestBadFetchHostsRefuseToStart(t *testing.T) {
	t.Parallel()
	c := apptest.Config(t.TempDir())
	c.FetchHosts = []string{"not a host"}
	a, err := app.New(t.Context(), testkit.Logger(), c, apptest.Options(app.Options{}))
	if err == nil {
		_ = a.Close(t.Context())
		t.Fatal("the app started with a bad fetch host")
	}
	if !strings.Contains(err.Error(), "HARNESS_FETCH_HOSTS") {
		t.Fatalf("error %v", err)
	}
}
