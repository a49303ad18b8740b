package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"harness/client"
	"harness/internal/sandbox"
	"harness/internal/session"
	"harness/internal/testkit/poll"
)

// runTool sends `run: script` and returns the bash output of that turn.
func runTool(t *testing.T, c *client.Client, id, script string) string {
	t.Helper()
	ctx := t.Context()
	ends := func() int {
		n := 0
		for _, ev := range events(t, c, id) {
			if ev.Type == "turn/end" {
				n++
			}
		}
		return n
	}
	before := ends()
	if _, err := c.SendMessage(ctx, id, "run: "+script, ""); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, "the turn to end", func() bool { return ends() > before }, poll.Within(60*time.Second))
	out := ""
	for _, ev := range events(t, c, id) {
		if ev.Type != "tool/result" {
			continue
		}
		var r session.ToolResult
		if err := json.Unmarshal(ev.Data, &r); err != nil {
			t.Fatal(err)
		}
		out = ""
		for _, b := range r.Message.Content {
			for _, c := range b.Content {
				out += c.Text
			}
		}
	}
	return out
}

// The server's environment holds provider keys; a tool must never read it,
// nor stop the server. This runs the real binary, so the keys sit in the
// process's initial environment as they do in production. With
// HARNESS_SANDBOX=off (and only then) the same command does read them:
// the test proves what the sandbox stops.
func TestToolsCannotReachTheServerProcess(t *testing.T) {
	for _, tc := range []struct {
		mode      sandbox.Mode
		wantLeak  bool
		confined  bool
		envExtras []string
	}{
		{mode: sandbox.ModeAuto, wantLeak: false, confined: true},
		{mode: sandbox.ModeOff, wantLeak: true, confined: false, envExtras: []string{"HARNESS_SANDBOX=off"}},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			tok := userToken(t, dir, "mallory", false)
			canary := fmt.Sprintf("sk-canary-%d", time.Now().UnixNano())
			env := append([]string{"OPENAI_API_KEY=" + canary, "OPENAI_BASE_URL=http://127.0.0.1:9/v1", "HARNESS_TEST_CANARY=" + canary}, tc.envExtras...)
			p := startServer(t, dir, env...)
			c := client.New(p.URL, client.WithToken(tok))
			ctx := t.Context()

			var sb struct {
				Sandbox sandbox.Status `json:"sandbox"`
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/api/sandbox", nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			res, err := httpClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			json.NewDecoder(res.Body).Decode(&sb)
			res.Body.Close()
			if sb.Sandbox.Confined != tc.confined || sb.Sandbox.Mode != tc.mode {
				t.Fatalf("/api/sandbox says %+v", sb.Sandbox)
			}

			s, err := c.CreateSession(ctx, client.NewSession{Provider: "demo", Mode: "auto"})
			if err != nil {
				t.Fatal(err)
			}
			pid := p.cmd.Process.Pid
			out := runTool(t, c, s.ID, fmt.Sprintf(`tr '\0' '\n' < /proc/$PPID/environ; tr '\0' '\n' < /proc/%d/environ; env | grep CANARY`, pid))
			if leaked := strings.Contains(out, canary); leaked != tc.wantLeak {
				t.Fatalf("canary read = %v, want %v:\n%s", leaked, tc.wantLeak, out)
			}
			if !tc.confined {
				return // an unconfined shell could also kill the server
			}
			runTool(t, c, s.ID, fmt.Sprintf(`kill -9 %d; kill -9 $PPID; kill -9 -1; echo tried`, pid))
			if _, exited := p.exitErr(200 * time.Millisecond); exited {
				t.Fatalf("a tool killed the server:\n%s", p.logs)
			}
			if res, err := http.Get(p.URL + "/healthz"); err != nil || res.StatusCode != http.StatusOK {
				t.Fatalf("the server stopped answering: %v", err)
			}
			if strings.Contains(p.logs.String(), canary) {
				t.Fatal("the canary key reached a log line")
			}
		})
	}
}
