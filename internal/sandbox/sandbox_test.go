package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"harness/internal/egress"
	"harness/internal/sandbox"
	"harness/internal/testkit/poll"
)

// requireSandbox builds a sandbox in mode m, failing when the machine cannot
// confine (CI installs bubblewrap; kernels here have Landlock) unless
// HARNESS_TEST_ALLOW_NO_SANDBOX=1 says this machine cannot.
func requireSandbox(t *testing.T, m sandbox.Mode, limits sandbox.Limits) *sandbox.Sandbox {
	t.Helper()
	sb, err := sandbox.New(t.Context(), nil, sandbox.Config{Mode: m, Limits: limits, NoCgroups: true})
	if err != nil {
		if os.Getenv("HARNESS_TEST_ALLOW_NO_SANDBOX") == "1" {
			t.Skipf("!!! SKIPPING: sandbox mode %s is not usable here: %v !!!", m, err)
		}
		t.Fatalf("sandbox mode %s: %v (install bubblewrap; set HARNESS_TEST_ALLOW_NO_SANDBOX=1 only where the kernel has no Landlock)", m, err)
	}
	st := sb.Status()
	if !st.Confined {
		t.Fatalf("mode %s is not confining: %+v", m, st)
	}
	return sb
}

// layout is a data directory as the server lays it out: a workspace, a
// scratch dir, another session's workspace and the database beside them,
// all readable by anyone on the host so that only the sandbox can refuse.
type layout struct {
	data, ws, scratch, other, db string
}

func newLayout(t *testing.T, sb *sandbox.Sandbox) layout {
	t.Helper()
	data := t.TempDir()
	// Go makes the test's temporary directories private; open them so that
	// only the sandbox, not the host's permissions, refuses access.
	for _, d := range []string{filepath.Dir(data), data} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	l := layout{
		data:    data,
		ws:      filepath.Join(data, "workspaces", "mine"),
		scratch: filepath.Join(data, "scratch", "mine"),
		other:   filepath.Join(data, "workspaces", "theirs"),
		db:      filepath.Join(data, "harness.db"),
	}
	for _, d := range []string{l.ws, l.scratch, l.other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := sb.Own(d); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{filepath.Join(data, "workspaces"), filepath.Join(data, "scratch")} {
		if err := os.Chmod(d, 0o777); err != nil { // writable by anyone: only the sandbox stops writes
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(l.other, "secret.txt"), []byte("their-secret\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(l.db, []byte("SQLite format 3\x00 the-database\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	return l
}

// run runs a bash script confined and returns its combined output and exit
// code.
func run(t *testing.T, sb *sandbox.Sandbox, p sandbox.Process, script string) (string, int) {
	t.Helper()
	p.Path = "bash"
	p.Args = []string{"-c", script}
	if p.Env == nil {
		p.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C"}
	}
	cmd, err := sb.Command(p)
	if err != nil {
		t.Fatalf("command: %v", err)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		t.Fatalf("the command did not finish; output so far:\n%s", out.String())
	}
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("wait: %v", err)
	}
	return out.String(), cmd.ProcessState.ExitCode()
}

var confinedModes = []sandbox.Mode{sandbox.ModeBwrap, sandbox.ModeLandlock}

func TestConfinement(t *testing.T) {
	canary := "HARNESS_TEST_CANARY_KEY=sk-canary-" + fmt.Sprint(time.Now().UnixNano())
	k, v, _ := strings.Cut(canary, "=")
	t.Setenv(k, v)
	for _, m := range confinedModes {
		t.Run(string(m), func(t *testing.T) {
			sb := requireSandbox(t, m, sandbox.Limits{})
			l := newLayout(t, sb)
			p := sandbox.Process{Workspace: l.ws, Scratch: l.scratch}
			const ok, fails, either = 0, 1, 2 // expected exit
			cases := []struct {
				name, script string
				exit         int
				mustNot      []string
			}{
				{"workspace is writable", "echo hello > note.txt && cat note.txt", ok, nil},
				{"scratch is writable", `echo tmp > "$TMPDIR/t" && cat "$TMPDIR/t"`, ok, nil},
				{"the database is unreadable", "cat " + l.db, fails, []string{"the-database"}},
				// Under bubblewrap as a plain user the path may be writable
				// in the sandbox's own tmpfs; the host file is checked below.
				{"the database is not writable", "echo x >> " + l.db, either, nil},
				{"another workspace is unreadable", "cat " + filepath.Join(l.other, "secret.txt"), fails, []string{"their-secret"}},
				// Under bubblewrap the workspace's parents exist as empty
				// directories; nothing of the real data directory shows.
				{"the data directory cannot be listed", "ls " + l.data + " " + filepath.Dir(l.ws), either, []string{"theirs", "the-database"}},
				{"/etc is read-only", "echo x > /etc/harness-test && echo wrote", fails, []string{"wrote"}},
				{"the server's environment is unreadable", fmt.Sprintf("cat /proc/%d/environ; tr '\\0' '\\n' < /proc/$PPID/environ", os.Getpid()), fails, []string{v}},
				{"the server's memory is unreadable", fmt.Sprintf("head -c 16 /proc/%d/mem > /dev/null", os.Getpid()), fails, nil},
				{"the environment is what was given", "env", ok, []string{v}},
			}
			for _, c := range cases {
				out, code := run(t, sb, p, c.script)
				if c.exit != either && (c.exit == ok) != (code == 0) {
					t.Errorf("%s: exit %d, output:\n%s", c.name, code, out)
				}
				for _, s := range c.mustNot {
					if strings.Contains(out, s) {
						t.Errorf("%s: output contains %q:\n%s", c.name, s, out)
					}
				}
			}
			if b, err := os.ReadFile(filepath.Join(l.ws, "note.txt")); err != nil || string(b) != "hello\n" {
				t.Errorf("note.txt on the host = %q, %v", b, err)
			}
			if b, err := os.ReadFile(l.db); err != nil || !strings.HasSuffix(string(b), "the-database\n") {
				t.Errorf("the database file changed: %q, %v", b, err)
			}
			if _, err := os.Stat("/etc/harness-test"); err == nil {
				os.Remove("/etc/harness-test")
				t.Errorf("the sandbox wrote /etc")
			}
		})
	}
}

func TestIdentityIsUnprivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("!!! SKIPPING: the identity drop is tested as root (tools keep the server's user otherwise) !!!")
	}
	for _, m := range confinedModes {
		t.Run(string(m), func(t *testing.T) {
			sb := requireSandbox(t, m, sandbox.Limits{})
			l := newLayout(t, sb)
			out, _ := run(t, sb, sandbox.Process{Workspace: l.ws}, "id -u; id -g; cat /etc/shadow; echo created > f")
			if !strings.HasPrefix(out, "65534\n65534\n") {
				t.Errorf("identity: %q, want 65534 65534", out)
			}
			if strings.Contains(out, "root:") {
				t.Errorf("/etc/shadow was readable:\n%s", out)
			}
			fi, err := os.Stat(filepath.Join(l.ws, "f"))
			if err != nil {
				t.Fatalf("the command could not write its workspace: %v\n%s", err, out)
			}
			if st := fi.Sys().(*syscall.Stat_t); st.Uid != 65534 {
				t.Errorf("a file made in the sandbox belongs to uid %d, want 65534", st.Uid)
			}
		})
	}
}

func TestServerCannotBeSignalled(t *testing.T) {
	got := make(chan os.Signal, 1)
	signal.Notify(got, syscall.SIGUSR1)
	defer signal.Stop(got)
	for _, m := range confinedModes {
		t.Run(string(m), func(t *testing.T) {
			sb := requireSandbox(t, m, sandbox.Limits{})
			l := newLayout(t, sb)
			out, code := run(t, sb, sandbox.Process{Workspace: l.ws}, fmt.Sprintf("kill -USR1 %d; kill -USR1 $PPID; echo sent", os.Getpid()))
			if code != 0 || !strings.Contains(out, "sent") {
				t.Fatalf("exit %d:\n%s", code, out)
			}
			select {
			case <-got:
				t.Fatalf("the sandboxed command signalled the server:\n%s", out)
			case <-time.After(200 * time.Millisecond):
			}
		})
	}
}

// With the network off nothing answers; with it on the command has no host
// network either (a listener on the host's 127.0.0.1 is unreachable
// directly), and its one way out is the egress proxy: curl reaches an
// allow-listed loopback HTTP server through it (HTTP_PROXY, and SOCKS5 by
// ALL_PROXY), and a loopback server not on the list is refused with the
// policy's reason.
func TestNetwork(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("hello-from-server\n"))
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	direct := fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && head -1 <&3", port)
	listed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "listed-site") }))
	defer listed.Close()
	unlisted := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "unlisted-site") }))
	defer unlisted.Close()
	for _, m := range confinedModes {
		t.Run(string(m), func(t *testing.T) {
			sb := requireSandbox(t, m, sandbox.Limits{})
			l := newLayout(t, sb)
			out, code := run(t, sb, sandbox.Process{Workspace: l.ws}, direct)
			if code == 0 || strings.Contains(out, "hello-from-server") {
				t.Errorf("network off: the server's port answered (exit %d):\n%s", code, out)
			}

			refused := make(chan *egress.Refusal, 8)
			proxy, err := egress.NewProxy(egress.ProxyDeps{
				Dir: filepath.Join(l.data, "egress"),
				Hosts: func(context.Context) ([]string, error) {
					return []string{strings.TrimPrefix(listed.URL, "http://")}, nil
				},
				Recorder: chanRecorder(refused),
			})
			if err != nil {
				t.Fatal(err)
			}
			defer proxy.Close()
			sock, err := proxy.Socket(t.Context(), "s1", nil)
			if err != nil {
				t.Fatal(err)
			}
			on := sandbox.Process{Workspace: l.ws, Scratch: l.scratch, Egress: sock}
			out, code = run(t, sb, on, direct)
			if code == 0 || strings.Contains(out, "hello-from-server") {
				t.Errorf("network on: the host's loopback answered directly (exit %d):\n%s", code, out)
			}
			out, code = run(t, sb, on, "curl -sS "+listed.URL+"; echo; env -u http_proxy -u HTTP_PROXY curl -sS "+listed.URL)
			if code != 0 || strings.Count(out, "listed-site") != 2 {
				t.Errorf("network on: the allow-listed server through the proxy (HTTP, then SOCKS5): exit %d:\n%s", code, out)
			}
			// A server the command starts itself is reached as localhost
			// (NO_PROXY), on the sandbox's own loopback.
			out, _ = run(t, sb, on, `echo own-server > index.html; python3 -m http.server 18080 --bind 127.0.0.1 >/dev/null 2>&1 &
for i in $(seq 100); do curl -s localhost:18080/index.html && break; sleep 0.1; done; kill %1`)
			if !strings.Contains(out, "own-server") {
				t.Errorf("network on: a server started in the sandbox is not reached as localhost:\n%s", out)
			}
			out, _ = run(t, sb, on, "curl -sS "+unlisted.URL)
			if strings.Contains(out, "unlisted-site") || !strings.Contains(out, "loopback") {
				t.Errorf("network on: a loopback server not allow-listed:\n%s", out)
			}
			select {
			case rf := <-refused:
				if rf.Reason != egress.ReasonLoopback {
					t.Errorf("refusal recorded as %+v", rf)
				}
			default:
				t.Error("the refusal was not recorded")
			}
			// The bridges ended with their commands.
			poll.Eventually(t, "the bridges to end", func() bool { return !processWith(sock) },
				poll.Within(10*time.Second), poll.Every(20*time.Millisecond))
		})
	}
}

// processWith reports whether a process's command line mentions s.
func processWith(s string) bool {
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, d := range dirs {
		if b, err := os.ReadFile(d); err == nil && bytes.Contains(b, []byte(s)) {
			return true
		}
	}
	return false
}

// chanRecorder sends the proxy's refusals to a channel.
type chanRecorder chan *egress.Refusal

func (c chanRecorder) Refused(_ context.Context, _ string, r *egress.Refusal) { c <- r }
func (c chanRecorder) Allowed(context.Context, string)                        {}

func TestLimits(t *testing.T) {
	for _, m := range confinedModes {
		t.Run(string(m), func(t *testing.T) {
			sb := requireSandbox(t, m, sandbox.Limits{Processes: 16, FileSizeBytes: 1 << 20})
			l := newLayout(t, sb)
			// Each child marks its start; with 16 processes allowed (bash and
			// the children included) at most 16 marks can exist at once.
			cmd, err := sb.Command(sandbox.Process{Path: "bash", Args: []string{"-c", "for i in $(seq 1 64); do (touch m$i; exec sleep 30) & done 2>/dev/null; wait"}, Workspace: l.ws, Env: []string{"PATH=/usr/bin:/bin"}})
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// The sandbox may take a while to start on a loaded machine:
			// wait for the first child, then let the loop run into the
			// limit (a load-shaping pause; the bound is what is checked).
			poll.Eventually(t, "the first child to start", func() bool {
				marks, _ := filepath.Glob(filepath.Join(l.ws, "m*"))
				return len(marks) > 0
			})
			time.Sleep(2 * time.Second)
			marks, _ := filepath.Glob(filepath.Join(l.ws, "m*"))
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
			if len(marks) == 0 || len(marks) > 16 {
				t.Errorf("processes started: %d, want 1..16", len(marks))
			}
			out, _ := run(t, sb, sandbox.Process{Workspace: l.ws}, "head -c 20000000 /dev/zero > big; echo status=$?")
			fi, err := os.Stat(filepath.Join(l.ws, "big"))
			if err != nil {
				t.Fatalf("no file written: %v\n%s", err, out)
			}
			if fi.Size() > 1<<20 || strings.Contains(out, "status=0") {
				t.Errorf("file size not bounded: %d bytes\n%s", fi.Size(), out)
			}
		})
	}
}

func TestForkBombEndsWithItsGroup(t *testing.T) {
	for _, m := range confinedModes {
		t.Run(string(m), func(t *testing.T) {
			sb := requireSandbox(t, m, sandbox.Limits{Processes: 64})
			l := newLayout(t, sb)
			cmd, err := sb.Command(sandbox.Process{Path: "bash", Args: []string{"-c", "b(){ b|b& }; b; sleep 30"}, Workspace: l.ws, Env: []string{"PATH=/usr/bin:/bin"}})
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Second) // shapes load: lets the bomb grow before its group is killed
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the group did not end")
			}
		})
	}
}

func TestReadOnlyWorkspaceAndExtraPaths(t *testing.T) {
	sb := requireSandbox(t, sandbox.ModeBwrap, sandbox.Limits{})
	l := newLayout(t, sb)
	src := filepath.Join(l.data, "source")
	os.MkdirAll(src, 0o755)
	os.WriteFile(filepath.Join(src, "README"), []byte("from source\n"), 0o644)
	out, code := run(t, sb, sandbox.Process{Workspace: l.ws, WorkspaceReadOnly: true, ReadOnly: []string{src}},
		"cat "+filepath.Join(src, "README")+"; echo x > f || echo refused")
	if code != 0 || !strings.Contains(out, "from source") || !strings.Contains(out, "refused") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

func TestOffRunsUnconfined(t *testing.T) {
	sb, err := sandbox.New(t.Context(), nil, sandbox.Config{Mode: sandbox.ModeOff})
	if err != nil {
		t.Fatal(err)
	}
	if st := sb.Status(); !st.Active || st.Confined {
		t.Fatalf("status %+v", st)
	}
	l := newLayout(t, sb)
	out, code := run(t, sb, sandbox.Process{Workspace: l.ws}, "cat "+filepath.Join(l.other, "secret.txt"))
	if code != 0 || !strings.Contains(out, "their-secret") {
		t.Errorf("off: exit %d:\n%s", code, out)
	}
}

func TestCommandChecksPaths(t *testing.T) {
	sb := requireSandbox(t, sandbox.ModeAuto, sandbox.Limits{})
	ws := t.TempDir()
	for _, p := range []sandbox.Process{
		{Path: "true", Workspace: "relative"},
		{Path: "true", Workspace: ws, Dir: "/etc"},
		{Path: "true", Workspace: ws, Scratch: "tmp"},
		{Path: "no-such-program-anywhere", Workspace: ws},
	} {
		if _, err := sb.Command(p); err == nil {
			t.Errorf("%+v: no error", p)
		}
	}
}

func TestConfigParsing(t *testing.T) {
	for in, want := range map[string]sandbox.Mode{"": sandbox.ModeAuto, "OFF": sandbox.ModeOff, "bwrap": sandbox.ModeBwrap, "landlock": sandbox.ModeLandlock} {
		if got, err := sandbox.ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := sandbox.ParseMode("maybe"); err == nil {
		t.Error("ParseMode(maybe): no error")
	}
	if u, g, err := sandbox.ParseIdentity("1000:100"); err != nil || u != 1000 || g != 100 {
		t.Errorf("ParseIdentity = %d %d %v", u, g, err)
	}
	for _, bad := range []string{"0", "x", "-1", "5:0"} {
		if _, _, err := sandbox.ParseIdentity(bad); err == nil {
			t.Errorf("ParseIdentity(%q): no error", bad)
		}
	}
	if _, err := sandbox.New(context.Background(), nil, sandbox.Config{Mode: "weird"}); err == nil {
		t.Error("New with a bad mode: no error")
	}
}
