package app_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"harness/client"
	"harness/internal/app"
	"harness/internal/config"
	"harness/internal/llm/fake"
	"harness/internal/sandbox"
	"harness/internal/session"
	"harness/internal/testkit/apptest"
	"harness/internal/testkit/poll"
)

// attackApp is the real app with small limits, so bounded attacks end fast.
func attackApp(t *testing.T) *apptest.App {
	t.Helper()
	return attackAppWith(t, nil)
}

// attackAppWith is attackApp with more configuration.
func attackAppWith(t *testing.T, more func(*config.Config)) *apptest.App {
	t.Helper()
	return apptest.StartApp(t, func(c *config.Config) {
		c.Sandbox.Limits = sandbox.Limits{Processes: 128, FileSizeBytes: 32 << 20, CPUSeconds: 60}
		if more != nil {
			more(c)
		}
	}, app.Options{DemoOptions: []fake.Option{fake.WithChunkDelay(time.Millisecond)}})
}

// runAs sends `run: script` in an auto-mode session of the user's and
// returns the output of the bash call of the turn it starts.
func runAs(t *testing.T, a *apptest.App, u apptest.User, sessionID, script string) string {
	t.Helper()
	ctx := t.Context()
	before := turnEnds(t, u.Client, sessionID)
	if _, err := u.Client.SendMessage(ctx, sessionID, "run: "+script, ""); err != nil {
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

// allEvents reads the whole log, page by page.
func allEvents(t *testing.T, c *client.Client, id string) []client.Event {
	t.Helper()
	var out []client.Event
	since := int64(-1)
	for {
		page, err := c.Events(t.Context(), id, since, 5000)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page.Events...)
		if len(page.Events) == 0 || page.Events[len(page.Events)-1].Seq >= page.Head {
			return out
		}
		since = page.Events[len(page.Events)-1].Seq
	}
}

// turnEnds counts the session's finished turns.
func turnEnds(t *testing.T, c *client.Client, id string) int {
	t.Helper()
	n := 0
	for _, ev := range allEvents(t, c, id) {
		if ev.Type == "turn/end" {
			n++
		}
	}
	return n
}

func toolText(r session.ToolResult) string {
	var sb strings.Builder
	for _, b := range r.Message.Content {
		for _, c := range b.Content {
			sb.WriteString(c.Text)
		}
	}
	return sb.String()
}

// hasLine reports whether a line of out is exactly s.
func hasLine(out, s string) bool {
	for _, l := range strings.Split(out, "\n") {
		if strings.TrimSpace(l) == s {
			return true
		}
	}
	return false
}

// waitIdle polls the session over REST until it is idle with nothing
// queued.
func waitIdle(t *testing.T, c *client.Client, id string) {
	t.Helper()
	poll.Eventually(t, "the session to go idle", func() bool {
		s, err := c.GetSession(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		return s.Status == client.StatusIdle && len(s.Queue.Queued) == 0 && len(s.Queue.Steering) == 0
	}, poll.Within(60*time.Second), poll.Every(20*time.Millisecond))
}

// TestSandboxAttacksFail runs, as a user who is not an admin, through the
// REST API, the real driver, the real shell and the real sandbox, each
// attack found against an unconfined shell; every one must fail.
func TestSandboxAttacksFail(t *testing.T) {
	canary := fmt.Sprintf("sk-canary-%d", time.Now().UnixNano())
	t.Setenv("HARNESS_TEST_CANARY_KEY", canary)
	t.Setenv("OPENAI_API_KEY", canary) // the server's own environment
	a := attackApp(t)
	if st := a.Sandbox.Status(); !st.Confined {
		t.Fatalf("the default configuration does not confine tools: %s", st.Summary())
	}
	ctx := t.Context()
	alice := a.User(t, "alice", false)
	bob := a.User(t, "bob", false)
	data := a.Config.DataDir

	// Alice keeps a secret in her workspace; the API hides her session from bob.
	as, err := alice.Client.CreateSession(ctx, client.NewSession{Mode: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(as.Workspace.Path, "secret.txt"), []byte("alice-secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.Client.GetSession(ctx, as.ID); err == nil {
		t.Fatal("bob can read alice's session over the API")
	}

	bs, err := bob.Client.CreateSession(ctx, client.NewSession{Mode: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	port := strings.TrimPrefix(a.URL, "http://127.0.0.1:")
	pid := os.Getpid()
	cases := []struct {
		name, script string
		mustNot      []string
		check        func(t *testing.T, out string)
	}{
		{name: "make himself admin through the database",
			script: `sqlite3 ../../harness.db "update users set role='admin' where name='bob'"; sqlite3 ` + data + `/harness.db "update users set role='admin' where name='bob'"; echo done`,
			check: func(t *testing.T, out string) {
				u, err := a.Auth.GetUser(ctx, "bob")
				if err != nil || u.Role != "user" {
					t.Errorf("bob's role is %q after the attack (%v):\n%s", u.Role, err, out)
				}
			}},
		{name: "read the whole log", script: `sqlite3 -readonly ` + data + `/harness.db "select 'rows:' || count(*) from events"; head -c 15 ` + data + `/harness.db; head -c 15 ../../harness.db`,
			mustNot: []string{"SQLite format", "rows:"}},
		{name: "read another user's workspace", script: `cat ../*/secret.txt; cat ` + as.Workspace.Path + `/secret.txt; ls ` + filepath.Dir(as.Workspace.Path),
			mustNot: []string{"alice-secret"},
			check: func(t *testing.T, out string) {
				if hasLine(out, as.ID) {
					t.Errorf("bob lists alice's workspace:\n%s", out)
				}
			}},
		{name: "read the secret key", script: `cat ` + data + `/secret.key; ls ` + data,
			check: func(t *testing.T, out string) {
				key, err := os.ReadFile(filepath.Join(data, "secret.key"))
				if err != nil || len(key) < 16 {
					t.Fatalf("no key file: %v", err)
				}
				if strings.Contains(out, strings.TrimSpace(string(key))) || hasLine(out, "secret.key") || hasLine(out, "harness.db") {
					t.Errorf("the key or the data directory is visible:\n%s", out)
				}
			}},
		{name: "read the server's environment", script: fmt.Sprintf(`tr '\0' '\n' < /proc/$PPID/environ; tr '\0' '\n' < /proc/%d/environ; cat /proc/1/environ; env`, pid),
			mustNot: []string{canary}},
		{name: "read the server's memory", script: fmt.Sprintf(`head -c 4096 /proc/%d/mem | wc -c; ls /proc/%d`, pid, pid),
			check: func(t *testing.T, out string) {
				if hasLine(out, "4096") || hasLine(out, "environ") {
					t.Errorf("the server's memory or /proc entry is reachable:\n%s", out)
				}
			}},
		{name: "write /etc", script: `echo pwned > /etc/harness-pwned; echo pwned >> /etc/passwd`,
			check: func(t *testing.T, out string) {
				if _, err := os.Stat("/etc/harness-pwned"); err == nil {
					os.Remove("/etc/harness-pwned")
					t.Errorf("the shell wrote /etc:\n%s", out)
				}
			}},
		{name: "write the data directory", script: `echo pwned > ` + data + `/pwned; echo pwned > ` + filepath.Dir(as.Workspace.Path) + `/pwned`,
			check: func(t *testing.T, out string) {
				for _, p := range []string{filepath.Join(data, "pwned"), filepath.Join(filepath.Dir(as.Workspace.Path), "pwned")} {
					if _, err := os.Stat(p); err == nil {
						t.Errorf("the shell wrote %s:\n%s", p, out)
					}
				}
			}},
		{name: "kill the server", script: fmt.Sprintf(`kill $PPID; kill -9 %d; kill -9 1; echo tried`, pid)},
		{name: "connect to the server's own port", script: `exec 3<>/dev/tcp/127.0.0.1/` + port + ` && printf 'GET /healthz HTTP/1.0\r\n\r\n' >&3 && cat <&3`,
			mustNot: []string{"200 OK"}},
		{name: "a 10 GB file", script: `head -c 10G /dev/zero > big; ls -l big; rm -f big`,
			check: func(t *testing.T, out string) {
				// head dies of SIGXFSZ at the limit (32 MiB here).
				if !strings.Contains(out, "File size limit exceeded") || !strings.Contains(out, " 33554432 ") {
					t.Errorf("the write was not stopped at the limit:\n%s", out)
				}
			}},
	}
	for _, c := range cases {
		t.Logf("attack: %s", c.name)
		out := runAs(t, a, bob, bs.ID, c.script)
		for _, s := range c.mustNot {
			if strings.Contains(out, s) {
				t.Errorf("%s: the output has %q:\n%s", c.name, s, out)
			}
		}
		if c.check != nil {
			c.check(t, out)
		}
		// The server still serves after each attempt.
		if res, err := http.Get(a.URL + "/healthz"); err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("%s: the server stopped answering: %v", c.name, err)
		} else {
			res.Body.Close()
		}
	}
	// Nothing of the canary reached the log either.
	var buf strings.Builder
	if err := bob.Client.Export(ctx, bs.ID, &buf); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), canary) {
		t.Error("the canary key is in the session log")
	}
}

// TestForkBombIsBoundedAndOthersGoOn runs a fork bomb in one session while
// another session's command still runs, and leaves no process behind.
func TestForkBombIsBoundedAndOthersGoOn(t *testing.T) {
	a := attackApp(t)
	ctx := t.Context()
	bob := a.User(t, "bob", false)
	alice := a.User(t, "alice", false)
	bomb, err := bob.Client.CreateSession(ctx, client.NewSession{Mode: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := alice.Client.CreateSession(ctx, client.NewSession{Mode: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bob.Client.SendMessage(ctx, bomb.ID, "run: timeout 4 bash -c 'b(){ b|b& }; b'; echo bomb-over", ""); err != nil {
		t.Fatal(err)
	}
	// Let the bomb spread before the other session runs: sandboxed tools
	// run as 65534 under a root server. A loaded machine may see the
	// bomb's 4 s end first; the other session must run either way.
	before := turnEnds(t, bob.Client, bomb.ID)
	poll.Eventually(t, "the fork bomb to spread or end", func() bool {
		if os.Geteuid() == 0 {
			out, _ := exec.Command("pgrep", "-c", "-u", "65534", "bash").Output()
			if n, _ := strconv.Atoi(strings.TrimSpace(string(out))); n >= 5 {
				return true
			}
		}
		return turnEnds(t, bob.Client, bomb.ID) > before
	}, poll.Within(60*time.Second), poll.Every(20*time.Millisecond))
	if out := runAs(t, a, alice, other.ID, "echo still-running"); !strings.Contains(out, "still-running") {
		t.Errorf("another session could not run while the bomb ran:\n%s", out)
	}
	waitIdle(t, bob.Client, bomb.ID)
	// The bomb's processes are gone with its command.
	if os.Geteuid() != 0 {
		return
	}
	poll.Eventually(t, "no bomb process left", func() bool {
		out, _ := exec.Command("pgrep", "-c", "-u", "65534", "bash").Output()
		return strings.TrimSpace(string(out)) == "0"
	}, poll.Within(5*time.Second), poll.Every(50*time.Millisecond))
}

// TestFreshCloneRunsToolsWithRelativeDataDir starts the server the way the
// README says (a relative data directory) and runs `run: ls` first thing.
func TestFreshCloneRunsToolsWithRelativeDataDir(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	cfg, err := config.Load([]string{"-data", "data", "-addr", "127.0.0.1:0"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DataDir != filepath.Join(dir, "data") {
		t.Fatalf("data dir %q is not absolute", cfg.DataDir)
	}
	a := apptest.StartApp(t, func(c *config.Config) { c.DataDir, c.DBDSN = cfg.DataDir, cfg.DBDSN }, app.Options{})
	u := a.User(t, "newcomer", false)
	s, err := u.Client.CreateSession(t.Context(), client.NewSession{Mode: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Workspace.Path, "hello.txt"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := runAs(t, a, u, s.ID, "ls")
	if !strings.Contains(out, "hello.txt") || strings.Contains(out, "absolute workspace") {
		t.Fatalf("run: ls gave %q", out)
	}
}

// TestNoSandboxRefusesToolsLoudly: where no sandbox can work (a kernel
// without Landlock), shell tools are refused with a coded error the model
// and the user read, the UI and the API say why, clones are refused, and
// the file tools and searches still work.
func TestNoSandboxRefusesToolsLoudly(t *testing.T) {
	reason := "the kernel does not support Landlock; set HARNESS_SANDBOX=off to run tools unconfined"
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "repo"), 0o755); err != nil {
		t.Fatal(err)
	}
	a := apptest.StartApp(t, func(c *config.Config) { c.WorkspaceRoots = []config.WorkspaceRoot{{Path: root}} },
		app.Options{Sandbox: sandbox.Unavailable(reason), DemoOptions: []fake.Option{fake.WithChunkDelay(time.Millisecond)}})
	ctx := t.Context()
	u := a.User(t, "carol", false)
	s, err := u.Client.CreateSession(ctx, client.NewSession{Mode: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	if out := runAs(t, a, u, s.ID, "ls"); !strings.Contains(out, reason) || !strings.Contains(out, "refused") {
		t.Fatalf("bash without a sandbox: %q", out)
	}
	if _, err := u.Client.SendMessage(ctx, s.ID, "write: notes.txt\nstill works", ""); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, u.Client, s.ID)
	if b, err := os.ReadFile(filepath.Join(s.Workspace.Path, "notes.txt")); err != nil || string(b) != "still works" {
		t.Fatalf("the write tool: %q %v", b, err)
	}
	var resp struct {
		Sandbox sandbox.Status `json:"sandbox"`
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, a.URL+"/api/sandbox", nil)
	req.Header.Set("Authorization", "Bearer "+u.Token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(res.Body).Decode(&resp)
	res.Body.Close()
	if resp.Sandbox.Active || resp.Sandbox.Problem != reason {
		t.Fatalf("/api/sandbox: %+v", resp.Sandbox)
	}
	_, err = u.Client.CreateSession(ctx, client.NewSession{Workspace: client.WorkspaceRequest{Kind: "clone", Source: filepath.Join(root, "repo")}})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != "unavailable" || !strings.Contains(ce.Message, reason) {
		t.Fatalf("a clone without a sandbox: %v", err)
	}
	// The chat page says it too, to a signed-in browser.
	page := browserGet(t, a.URL, "carol", "carol-password", "/sessions/"+s.ID)
	if !strings.Contains(page, `id="tools-refused"`) || !strings.Contains(page, "does not support Landlock") {
		t.Fatalf("the chat page does not say tools are refused:\n%.2000s", page)
	}
}

var csrfInput = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

// browserGet signs in with a cookie, as a browser does, and returns the
// page at path.
func browserGet(t *testing.T, base, name, pass, path string) string {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	get := func(p string) string {
		res, err := c.Get(base + p)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
	m := csrfInput.FindStringSubmatch(get("/login"))
	if m == nil {
		t.Fatal("no CSRF token on the login page")
	}
	res, err := c.PostForm(base+"/login", url.Values{"_csrf": {m[1]}, "name": {name}, "password": {pass}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return get(path)
}
