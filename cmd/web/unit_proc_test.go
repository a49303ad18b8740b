package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"harness/client"
	"harness/internal/sandbox"
	"harness/internal/testkit/poll"
)

const unitPath = "../../deploy/harness.service"

// execWrapped replaces a server child by the command HARNESS_TEST_WRAP
// holds (a JSON argv) followed by this process's arguments, with the
// variable removed: the wrapper sets up what the server runs under, then
// runs the server.
func execWrapped() {
	w := os.Getenv("HARNESS_TEST_WRAP")
	if w == "" {
		return
	}
	var argv []string
	if err := json.Unmarshal([]byte(w), &argv); err != nil || len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "HARNESS_TEST_WRAP: want a JSON argv:", err)
		os.Exit(2)
	}
	_ = os.Unsetenv("HARNESS_TEST_WRAP")
	err := syscall.Exec(argv[0], append(argv, os.Args[1:]...), os.Environ())
	fmt.Fprintln(os.Stderr, "HARNESS_TEST_WRAP:", err)
	os.Exit(2)
}

// unitSettings reads the [Service] section of a unit file: every key's
// values, in order.
func unitSettings(t *testing.T, path string) map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			section = line
		case section == "[Service]":
			k, v, _ := strings.Cut(line, "=")
			out[k] = append(out[k], v)
		}
	}
	return out
}

// one is the single value of key in the unit, or fails.
func one(t *testing.T, unit map[string][]string, key string) string {
	t.Helper()
	if len(unit[key]) != 1 {
		t.Fatalf("deploy/harness.service: want one %s, have %q", key, unit[key])
	}
	return unit[key][0]
}

// unitWrapper is a command that runs its arguments as systemd runs the
// unit's ExecStart, for the settings that matter to the sandbox: a mount
// namespace of its own with the file system read-only but /dev, /proc,
// /sys and ReadWritePaths (ProtectSystem=strict), an empty /tmp and
// /var/tmp (PrivateTmp), empty read-only /home, /root and /run/user
// (ProtectHome=yes), then no_new_privs and the capability bounding set.
// rw replaces the unit's ReadWritePaths (the test's data directory).
func unitWrapper(t *testing.T, unit map[string][]string, rw string) []string {
	t.Helper()
	for key, want := range map[string]string{"ProtectSystem": "strict", "PrivateTmp": "yes", "ProtectHome": "yes", "NoNewPrivileges": "yes", "User": "root"} {
		if got := one(t, unit, key); got != want {
			t.Fatalf("deploy/harness.service: %s=%s; this test emulates %s", key, got, want)
		}
	}
	if got := one(t, unit, "ReadWritePaths"); got != "/var/lib/harness" {
		t.Fatalf("deploy/harness.service: ReadWritePaths=%s; this test puts its data directory in place of /var/lib/harness", got)
	}
	bounding := "-all"
	for _, c := range strings.Fields(one(t, unit, "CapabilityBoundingSet")) {
		bounding += ",+" + strings.ToLower(strings.TrimPrefix(c, "CAP_"))
	}
	script := `set -e
# ProtectSystem=strict: every mount read-only but the API file systems.
awk '{print $5}' /proc/self/mountinfo | while read -r m; do
  case "$m" in /proc|/proc/*|/sys|/sys/*|/dev|/dev/*) continue ;; esac
  mount -o remount,bind,ro "$m" 2>/dev/null || true
done
# ReadWritePaths.
mount --bind "$RW" "$RW"
mount -o remount,bind,rw "$RW"
# PrivateTmp.
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tmpfs -o mode=1777 tmpfs /var/tmp
# ProtectHome=yes.
for d in /home /root /run/user; do
  [ -d "$d" ] && mount -t tmpfs -o ro,mode=000 tmpfs "$d"
done
exec setpriv --no-new-privs --bounding-set="$BOUNDING" -- "$@"
`
	return []string{"/usr/bin/env", "RW=" + rw, "BOUNDING=" + bounding,
		"unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", script, "sh"}
}

// deploy/harness.service, checked by systemd-analyze verify, and the
// server run as that unit runs it: under its read-only file system,
// private /tmp, hidden homes, no_new_privs and capability bounding set.
// The sandbox still works there: bubblewrap and Landlock are in force, a
// tool runs as nobody, writes its workspace and cannot write /usr. The
// server's own /proc status shows the bounding set and no_new_privs, and
// its mounts the read-only root, so the emulation did apply.
func TestServiceUnit(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a server; skipped with -short")
	}
	unit := unitSettings(t, unitPath)
	t.Run("verify", func(t *testing.T) {
		t.Parallel()
		analyze, err := exec.LookPath("systemd-analyze")
		if err != nil {
			t.Skip("!!! SKIPPING: systemd-analyze is not installed (Debian's systemd); the unit file is not verified !!!")
		}
		src, err := os.ReadFile(unitPath)
		if err != nil {
			t.Fatal(err)
		}
		// verify wants ExecStart's binary to exist.
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Replace(string(src), "ExecStart=/usr/local/bin/harness", "ExecStart="+exe, 1)
		path := filepath.Join(t.TempDir(), "harness.service")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(analyze, "verify", path).CombinedOutput()
		if err != nil || len(out) > 0 {
			t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
		}
	})
	t.Run("sandbox", func(t *testing.T) {
		t.Parallel()
		if os.Geteuid() != 0 {
			t.Skip("!!! SKIPPING: the unit runs the server as root; its bounding set and mounts are emulated only as root !!!")
		}
		for _, tool := range []string{"unshare", "setpriv"} {
			if _, err := exec.LookPath(tool); err != nil {
				t.Skip("!!! SKIPPING: " + tool + " (util-linux) is missing; the unit's confinement cannot be emulated !!!")
			}
		}
		// Outside /tmp, which the unit makes private: the data directory
		// stands for /var/lib/harness.
		root, err := os.MkdirTemp("/var/lib", "harness-unit-test-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(root) })
		// The binary too: the test binary sits under /tmp.
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		bin := filepath.Join(root, "harness")
		copyFile(t, exe, bin, 0o755)
		dir := filepath.Join(root, "data")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		tok := userToken(t, dir, "unit", true)
		site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "listed-local-site") }))
		t.Cleanup(site.Close)
		wrap, err := json.Marshal(append(unitWrapper(t, unit, root), bin))
		if err != nil {
			t.Fatal(err)
		}
		p := startServer(t, dir, "HARNESS_TEST_WRAP="+string(wrap), "HARNESS_FETCH_HOSTS="+strings.TrimPrefix(site.URL, "http://"))

		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		self, err := os.ReadFile("/proc/self/status")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(status), "NoNewPrivs:\t1") || statusField(string(status), "CapBnd") == statusField(string(self), "CapBnd") {
			t.Fatalf("the server does not run under the unit's no_new_privs and bounding set:\n%s", status)
		}
		mounts, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", p.cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		if !rootReadOnly(string(mounts)) {
			t.Fatalf("the server's root is not read-only:\n%s", mounts)
		}

		var sb struct {
			Sandbox sandbox.Status `json:"sandbox"`
		}
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, p.URL+"/api/sandbox", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		res, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = json.NewDecoder(res.Body).Decode(&sb)
		res.Body.Close()
		if !sb.Sandbox.Confined || !sb.Sandbox.Bwrap || sb.Sandbox.Landlock == 0 {
			t.Fatalf("the sandbox under the unit: %+v", sb.Sandbox)
		}
		c := client.New(p.URL, client.WithToken(tok))
		s, err := c.CreateSession(t.Context(), client.NewSession{Provider: "demo", Mode: "auto"})
		if err != nil {
			t.Fatal(err)
		}
		out := runTool(t, c, s.ID, `echo "uid=$(id -u)"; echo kept > f && cat f`)
		for _, want := range []string{"uid=65534", "kept"} {
			if !strings.Contains(out, want) {
				t.Errorf("a tool under the unit: want %q in:\n%s\nserver log:\n%s", want, out, p.logs)
			}
		}
		// The server's own file tools in the workspace tools wrote to.
		turnsBefore := countType(events(t, c, s.ID), "turn/end")
		if _, err := c.SendMessage(t.Context(), s.ID, "write: notes.txt\nwritten by the server", ""); err != nil {
			t.Fatal(err)
		}
		turnsEnded(t, c, s.ID, turnsBefore+1)
		if st, body := fileContent(t, p.URL, tok, s.ID, "notes.txt"); st != http.StatusOK || !strings.Contains(body, "written by the server") {
			t.Errorf("the write tool under the unit: %d %s", st, body)
		}
		// Network on: the egress proxy reaches a listed local server.
		browser := browserFrom("127.0.0.1", nil, false)
		if st, _ := tryLogin(t, browser, p.URL, "unit", "unit-password", nil); st != http.StatusSeeOther {
			t.Fatalf("admin login: %d", st)
		}
		_, page := getAs(t, browser, p.URL+"/sessions/"+s.ID, nil)
		m := csrfField.FindSubmatch(page)
		if m == nil {
			t.Fatal("no CSRF token on the chat page")
		}
		res, err = browser.PostForm(p.URL+"/sessions/"+s.ID+"/network", url.Values{"_csrf": {string(m[1])}, "network": {"1"}})
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode >= 400 {
			t.Fatalf("the network switch: %s", res.Status)
		}
		if out := runTool(t, c, s.ID, `curl -sS --max-time 20 `+site.URL+`/`); !strings.Contains(out, "listed-local-site") {
			t.Errorf("a network-on tool under the unit:\n%s\nserver log:\n%s", out, p.logs)
		}
		// A fork copies the workspace (the server reads nobody's files and
		// gives the copy to nobody).
		fork, err := c.Fork(t.Context(), s.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		if st, body := fileContent(t, p.URL, tok, fork.ID, "f"); st != http.StatusOK || !strings.Contains(body, "kept") {
			t.Errorf("the fork's copy under the unit: %d %s", st, body)
		}
		// Cancelling a turn ends the tool's processes (nobody's).
		turnsBefore = countType(events(t, c, s.ID), "turn/end")
		if _, err := c.SendMessage(t.Context(), s.ID, "run: echo started; sleep 607.25", ""); err != nil {
			t.Fatal(err)
		}
		poll.Eventually(t, "the tool to start", func() bool { return sleeping("607.25") }, poll.Within(30*time.Second))
		if err := c.Cancel(t.Context(), s.ID, false); err != nil {
			t.Fatal(err)
		}
		turnsEnded(t, c, s.ID, turnsBefore+1)
		poll.Eventually(t, "the cancelled tool's process to end", func() bool { return !sleeping("607.25") }, poll.Within(30*time.Second))
		// Deleting the session removes the workspace the tools (nobody)
		// and the server wrote.
		ws := filepath.Join(dir, "workspaces", s.ID)
		if _, err := os.Stat(filepath.Join(ws, "f")); err != nil {
			t.Fatalf("the workspace is not where expected: %v", err)
		}
		if err := c.DeleteSession(t.Context(), s.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(ws); !os.IsNotExist(err) {
			t.Errorf("the deleted session's workspace is still there: %v", err)
		}
	})
}

// sleeping reports whether a process runs `sleep arg`.
func sleeping(arg string) bool {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && string(b) == "sleep\x00"+arg+"\x00" {
			return true
		}
	}
	return false
}

// statusField is a field of a /proc/PID/status.
func statusField(status, name string) string {
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// rootReadOnly reports whether the mount at / is read-only in a
// /proc/PID/mountinfo.
func rootReadOnly(mountinfo string) bool {
	for _, line := range strings.Split(mountinfo, "\n") {
		f := strings.Fields(line)
		if len(f) > 5 && f[4] == "/" && strings.HasPrefix(f[5], "ro") {
			return true
		}
	}
	return false
}

// copyFile copies src to dst with mode.
func copyFile(t *testing.T, src, dst string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
