package main

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"harness/client"
	"harness/internal/testkit/poll"
)

// haveSQLite3 reports whether the sqlite3 CLI is installed. .ci/run installs
// it (and sets HARNESS_E2E_REQUIRE_CHROMIUM=1): there a missing CLI fails
// the test instead.
func haveSQLite3(t *testing.T) bool {
	t.Helper()
	if _, err := exec.LookPath("sqlite3"); err != nil {
		if os.Getenv("HARNESS_E2E_REQUIRE_CHROMIUM") == "1" {
			t.Fatalf("the sqlite3 CLI is missing in CI: %v", err)
		}
		return false
	}
	return true
}

// sqliteShell is the sqlite3 CLI left running on a database with its stdin
// a pipe the test keeps open, as an operator's shell is. It runs with
// -bail: a statement that fails ends it, and the next run reports why.
type sqliteShell struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	lines  chan string
	stderr *lockedBuffer
	done   chan error
	n      int
}

func openShell(t *testing.T, db string) *sqliteShell {
	t.Helper()
	cmd := exec.Command("sqlite3", "-bail", db)
	sh := &sqliteShell{t: t, cmd: cmd, lines: make(chan string, 64), stderr: &lockedBuffer{}, done: make(chan error, 1)}
	var err error
	if sh.in, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errOut, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(sh.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			sh.lines <- sc.Text()
		}
	})
	wg.Go(func() {
		sc := bufio.NewScanner(errOut)
		for sc.Scan() {
			sh.stderr.WriteString(sc.Text() + "\n")
		}
	})
	go func() {
		wg.Wait()
		sh.done <- cmd.Wait()
	}()
	t.Cleanup(sh.kill)
	// Wait for a lock as long as an operator would, rather than fail at
	// once on a commit under way.
	sh.run(".timeout 10000")
	return sh
}

// run sends sql to the shell and returns its output lines.
func (sh *sqliteShell) run(sql string) []string {
	sh.t.Helper()
	sh.n++
	marker := fmt.Sprintf("-- done %d --", sh.n)
	if _, err := fmt.Fprintf(sh.in, "%s\nselect '%s';\n", sql, marker); err != nil {
		sh.t.Fatalf("sqlite3 %q: %v\n%s", sql, err, sh.stderr)
	}
	var out []string
	timeout := time.After(60 * time.Second)
	for {
		select {
		case line, ok := <-sh.lines:
			if !ok {
				sh.t.Fatalf("sqlite3 ended running %q:\n%s", sql, sh.stderr)
			}
			if line == marker {
				return out
			}
			out = append(out, line)
		case <-timeout:
			sh.t.Fatalf("sqlite3 did not answer %q in 60 s:\n%s", sql, sh.stderr)
		}
	}
}

// one runs a query that answers one line.
func (sh *sqliteShell) one(sql string) string {
	sh.t.Helper()
	out := sh.run(sql)
	if len(out) != 1 {
		sh.t.Fatalf("sqlite3 %q answered %q", sql, out)
	}
	return out[0]
}

// close quits the shell and waits for it to exit cleanly.
func (sh *sqliteShell) close() {
	sh.t.Helper()
	_, _ = io.WriteString(sh.in, ".quit\n")
	_ = sh.in.Close()
	select {
	case err := <-sh.done:
		sh.done <- err
		if err != nil {
			sh.t.Fatalf("sqlite3 exited with %v:\n%s", err, sh.stderr)
		}
	case <-time.After(30 * time.Second):
		sh.t.Fatalf("sqlite3 did not exit after .quit:\n%s", sh.stderr)
	}
}

func (sh *sqliteShell) kill() {
	if sh.cmd.ProcessState == nil {
		_ = sh.cmd.Process.Kill()
	}
}

// writeLockProc is another process holding SQLite's write lock on a
// database (BEGIN EXCLUSIVE): the sqlite3 CLI when installed, else this
// test binary through the driver (holdWriteLock).
type writeLockProc struct {
	who     string
	release func()
}

func lockFromAnotherProcess(t *testing.T, db string) *writeLockProc {
	t.Helper()
	if haveSQLite3(t) {
		sh := openShell(t, db)
		sh.run("BEGIN EXCLUSIVE;")
		released := false
		return &writeLockProc{who: "sqlite3", release: func() {
			if !released {
				released = true
				sh.run("ROLLBACK;")
				sh.close()
			}
		}}
	}
	t.Log("SKIPPED LOUDLY: the sqlite3 CLI is not installed (apt-get install sqlite3; .ci/run does): a Go process holds the lock instead")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "HARNESS_TEST_LOCK_DB="+db)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errOut := &lockedBuffer{}
	cmd.Stderr = writerFunc(errOut.WriteString)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	r := bufio.NewReader(out)
	if line, err := r.ReadString('\n'); err != nil || line != "locked\n" {
		t.Fatalf("lock helper: %q %v\n%s", line, err, errOut)
	}
	released := false
	return &writeLockProc{who: "a Go process", release: func() {
		if !released {
			released = true
			_ = in.Close()
			if err := cmd.Wait(); err != nil {
				t.Fatalf("lock helper: %v\n%s", err, errOut)
			}
		}
	}}
}

type writerFunc func(string)

func (f writerFunc) Write(p []byte) (int, error) {
	f(string(p))
	return len(p), nil
}

// holdWriteLock takes the write lock on a database, says "locked" and
// holds it until its stdin closes. Run in its own process (TestMain).
func holdWriteLock(path string) int {
	ctx := context.Background()
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=10000")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if _, err := conn.ExecContext(ctx, "BEGIN EXCLUSIVE"); err != nil {
		fmt.Fprintln(os.Stderr, "lock:", err)
		return 1
	}
	fmt.Println("locked")
	_, _ = io.Copy(io.Discard, os.Stdin)
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		return 1
	}
	_ = conn.Close()
	return 0
}

// waitStored waits until another process reads the session's stored head
// at last or beyond: what was served up to last is then durable.
func waitStored(t *testing.T, db, sessionID string, last int64) {
	t.Helper()
	var head int64
	var err error
	waitFor(t, fmt.Sprintf("seq %d to be stored", last), func() bool {
		head, err = storedHead(db, sessionID)
		return err == nil && head >= last
	}, 60*time.Second, func() string { return fmt.Sprintf("stored head %d (%v)", head, err) })
}

// waitFor is poll.Eventually with a description of the state it gave up in.
func waitFor(t *testing.T, what string, cond func() bool, within time.Duration, state func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: %s", what, state())
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-t.Context().Done():
			t.Fatalf("test ended waiting for %s", what)
		}
	}
}

// servedEvents records every event the server pushes to a viewer of a
// session (a WebSocket subscription from seq 0).
func servedEvents(t *testing.T, c *client.Client, id string) func() []client.Event {
	t.Helper()
	cn, err := c.Dial(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cn.Close() })
	sub, err := cn.Subscribe(t.Context(), id, -1)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		served []client.Event
	)
	go func() {
		for p := range sub.C {
			mu.Lock()
			if p.Event != nil {
				served = append(served, *p.Event)
			}
			served = append(served, p.Events...)
			mu.Unlock()
		}
	}()
	return func() []client.Event {
		mu.Lock()
		defer mu.Unlock()
		return append([]client.Event(nil), served...)
	}
}

// An operator's sqlite3 shell stays open on the live database for the
// whole test, reading mid-stream and holding a read transaction (so no
// checkpoint can pass it and the WAL grows) while the server streams
// several turns. The server is SIGKILLed mid-turn with the shell still
// open and restarted beside it: every served event is there with its seq,
// and the next message's events continue the seqs. Once the shell is
// closed, another SIGKILL and restart find the log still whole.
func TestSQLiteShellLeftOpen(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns servers; skipped with -short")
	}
	t.Parallel()
	if !haveSQLite3(t) {
		t.Skip("SKIPPED LOUDLY: the sqlite3 CLI is not installed (apt-get install sqlite3; .ci/run does): a shell left open on the live database is not tested here")
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "harness.db")
	token := newToken(t, dir)
	srv := startServer(t, dir)
	ctx := t.Context()
	c := client.New(srv.URL, client.WithToken(token))
	s, err := c.CreateSession(ctx, client.NewSession{Title: "a shell left open"})
	if err != nil {
		t.Fatal(err)
	}

	sh := openShell(t, db)
	if n := sh.one("select count(*) from sessions;"); n != "1" {
		t.Fatalf("the shell counts %s sessions, want 1", n)
	}
	served := servedEvents(t, c, s.ID)
	for _, p := range []string{"long: 400", "long: 400", "long: 3000"} {
		if _, err := c.SendMessage(ctx, s.ID, p, "followup"); err != nil {
			t.Fatal(err)
		}
	}
	poll.Eventually(t, "the first reply to stream", func() bool {
		return countType(served(), "assistant/chunk") >= 50
	}, poll.Within(30*time.Second))
	if n := sh.one("select count(*) from sessions;"); n != "1" {
		t.Fatalf("mid-stream the shell counts %s sessions, want 1", n)
	}
	// A read transaction left open: its snapshot pins the WAL.
	snapshot := sh.one("BEGIN; select head from sessions where id = '" + s.ID + "';")
	walAtBegin := fileSize(db + "-wal")
	poll.Eventually(t, "two turns to end and the third to stream", func() bool {
		evs := served()
		return countTurnEnds(evs, "") >= 2 && countType(evs, "assistant/chunk") >= 1000
	}, poll.Within(60*time.Second))
	if n := sh.one("select head from sessions where id = '" + s.ID + "';"); n != snapshot {
		t.Fatalf("the shell's read transaction moved from head %s to %s", snapshot, n)
	}
	t.Logf("the shell's snapshot is head %s; the WAL grew from %d to %d bytes under it", snapshot, walAtBegin, fileSize(db+"-wal"))

	// Kill mid-turn once what was served up to now is stored.
	want := served()
	if countTurnEnds(want, "") != 2 {
		t.Fatalf("%d turns ended before the kill, want 2 (the third mid-stream)", countTurnEnds(want, ""))
	}
	last := want[len(want)-1].Seq
	waitStored(t, db, s.ID, last)
	srv.kill()
	srv = startServer(t, dir)
	c = client.New(srv.URL, client.WithToken(token))
	evs := events(t, c, s.ID)
	sameEvents(t, want, evs)
	for i, e := range evs {
		if e.Seq != int64(i) {
			t.Fatalf("event %d has seq %d after the restart", i, e.Seq)
		}
	}
	t.Logf("served up to seq %d before the kill; %d events after the restart", last, len(evs))
	// The shell, still open, sees the new server's writes once its
	// transaction ends.
	sh.run("COMMIT;")
	if n := sh.one("select head from sessions where id = '" + s.ID + "';"); n != fmt.Sprint(evs[len(evs)-1].Seq) {
		t.Fatalf("the shell reads head %s, the server serves up to %d", n, evs[len(evs)-1].Seq)
	}

	// The next message continues the seqs.
	id, err := c.SendMessage(ctx, s.ID, "after the kill", "followup")
	if err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, "the next turn to end", func() bool { return countTurnEnds(events(t, c, s.ID), "") == 4 }, poll.Within(30*time.Second))
	// Loading the session closed the turn the kill cut, after the
	// served events; the new turn follows.
	next := events(t, c, s.ID)
	checkWhole(t, next)
	sameEvents(t, evs, next)
	if n := countTurnEnds(next, "interrupted"); n != 1 {
		t.Fatalf("%d interrupted turns after the kill, want 1:\n%s", n, dumpTypes(next))
	}
	if !hasUserMessage(next, id) {
		t.Fatal("the message sent after the restart is not in the log")
	}

	// Close the shell; another crash still finds the log whole.
	sh.close()
	waitStored(t, db, s.ID, next[len(next)-1].Seq)
	srv.kill()
	srv = startServer(t, dir)
	c = client.New(srv.URL, client.WithToken(token))
	final := events(t, c, s.ID)
	checkWhole(t, final)
	sameEvents(t, next, final)
	if len(final) != len(next) {
		t.Fatalf("%d events after the last restart, %d before", len(final), len(next))
	}
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return -1
	}
	return fi.Size()
}
