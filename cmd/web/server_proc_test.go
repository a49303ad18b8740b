package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"harness/client"
	"harness/internal/config"
	"harness/internal/sandbox"
	"harness/internal/testkit/poll"
)

// The test binary doubles as the server: with HARNESS_TEST_SERVE=1 it runs
// main's run() with the environment it was given (and the arguments after
// "--", for a subcommand), so process tests exercise the real entry point,
// signals and all. With HARNESS_TEST_COUNT_DB it plays an operator's
// script reading the live database (countSessions); with
// HARNESS_TEST_LOCK_DB another process holding its write lock
// (holdWriteLock).
func TestMain(m *testing.M) {
	if db := os.Getenv("HARNESS_TEST_COUNT_DB"); db != "" {
		os.Exit(countSessions(db))
	}
	if db := os.Getenv("HARNESS_TEST_LOCK_DB"); db != "" {
		os.Exit(holdWriteLock(db))
	}
	if os.Getenv("HARNESS_TEST_SERVE") == "1" {
		execWrapped() // HARNESS_TEST_WRAP: the server under a wrapper (unit_proc_test.go)
		var args []string
		if i := slices.Index(os.Args, "--"); i >= 0 {
			args = os.Args[i+1:]
		}
		if err := run(args); err != nil {
			fmt.Fprintln(os.Stderr, "harness:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// serverProc is a server child process.
type serverProc struct {
	t    *testing.T
	cmd  *exec.Cmd
	URL  string
	logs *lockedBuffer
	done chan error
}

var servingURL = regexp.MustCompile(`msg="harness serving" url=(\S+)`)

// startServer runs the server on dir and waits until /readyz answers.
func startServer(t *testing.T, dir string, env ...string) *serverProc {
	t.Helper()
	p, err := tryStartServer(t, dir, env...)
	if err != nil {
		t.Fatalf("%v\n%s", err, p.logs)
	}
	return p
}

// tryStartServer starts the server and returns an error if it exits or does
// not become ready.
func tryStartServer(t *testing.T, dir string, env ...string) (*serverProc, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		"HARNESS_TEST_SERVE=1",
		"HARNESS_DATA_DIR="+dir,
		"HARNESS_ADDR=127.0.0.1:0",
		"HARNESS_LOG_LEVEL=info",
		// A stop begins with no drain period unless a test asks for one
		// (env comes after: the last value of a variable wins).
		"HARNESS_DRAIN_PERIOD=0s",
		"DEEPSEEK_API_KEY=", "OPENAI_API_KEY=", "OPENAI_BASE_URL=",
	)
	cmd.Env = append(cmd.Env, env...)
	p := &serverProc{t: t, cmd: cmd, logs: &lockedBuffer{}, done: make(chan error, 1)}
	// Registered before the kill below, so it runs after it.
	t.Cleanup(func() { removeCgroups(p.logs.String()) })
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	urls := make(chan string, 1)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.logs.WriteString(line + "\n")
			if m := servingURL.FindStringSubmatch(line); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
		}
	}()
	// Wait closes the pipe: read it to the end first.
	go func() {
		<-readDone
		p.done <- cmd.Wait()
	}()
	t.Cleanup(func() { p.kill() })
	select {
	case p.URL = <-urls:
	case err := <-p.done:
		p.done <- err
		return p, fmt.Errorf("server exited before serving: %v", err)
	case <-time.After(30 * time.Second):
		return p, fmt.Errorf("server did not start")
	}
	ready := poll.Wait(t, func() bool {
		res, err := http.Get(p.URL + "/readyz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	}, poll.Every(10*time.Millisecond))
	if !ready {
		return p, fmt.Errorf("server never ready")
	}
	return p, nil
}

var cgroupsInForce = regexp.MustCompile(`msg="session caps in force" cgroups=(\S+)`)

// removeCgroups removes the session cgroups a killed server left (its
// data directory goes with the test, so no restart will), waiting a while
// for its tools' processes to leave.
func removeCgroups(logs string) {
	m := cgroupsInForce.FindStringSubmatch(logs)
	if m == nil {
		return
	}
	for deadline := time.Now().Add(10 * time.Second); sandbox.RemoveCgroups(m[1]) != nil && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
}

// kill sends SIGKILL: no shutdown code runs, as in a crash.
func (p *serverProc) kill() {
	if p.cmd.Process == nil || p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.t.Errorf("server did not die")
	}
}

// exitErr waits for the process to exit on its own.
func (p *serverProc) exitErr(timeout time.Duration) (error, bool) {
	select {
	case err := <-p.done:
		p.done <- err
		return err, true
	case <-time.After(timeout):
		return nil, false
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	sb strings.Builder
}

func (b *lockedBuffer) WriteString(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sb.WriteString(s)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sb.String()
}

// newToken creates an admin and an API token with the CLI on dir (the
// server must not be running: SQLite is single-process).
func newToken(t *testing.T, dir string) string {
	t.Helper()
	return userToken(t, dir, "crash", true)
}

// userToken creates a user (an admin when admin) named name, with the
// password name+"-password", and an API token, through the CLI.
func userToken(t *testing.T, dir, name string, admin bool) string {
	t.Helper()
	cfg := cliConfigAt(t, dir)
	args := []string{"user", "add", name}
	if admin {
		args = append(args, "--admin")
	}
	if r := runCLI(t, cfg, name+"-password\n", args...); r.err != nil {
		t.Fatalf("user add: %v %s", r.err, r.errOut)
	}
	r := runCLI(t, cfg, "", "token", "create", name)
	if r.err != nil {
		t.Fatalf("token create: %v %s", r.err, r.errOut)
	}
	for _, f := range strings.Fields(r.out) {
		if strings.HasPrefix(f, "hrn_") {
			return f
		}
	}
	t.Fatalf("no token in %q", r.out)
	return ""
}

// events reads a session's whole stored log, page by page.
func events(t *testing.T, c *client.Client, id string) []client.Event {
	t.Helper()
	var out []client.Event
	since := int64(-1)
	for {
		page, err := c.Events(context.Background(), id, since, 0)
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

// cliConfigAt is the configuration of a server on dir.
func cliConfigAt(t *testing.T, dir string) config.Config {
	t.Helper()
	cfg, err := config.Load(nil, func(k string) string {
		if k == "HARNESS_DATA_DIR" {
			return dir
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

var httpClient = &http.Client{Timeout: 10 * time.Second}
