package main

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"harness/client"
	"harness/internal/crashpoint"
	"harness/internal/testkit/poll"
)

// forkCrashFiles is the size of the parent's workspace: thousands of small
// files in nested directories, so the copy takes many steps to cut.
const forkCrashFiles = 2000

// TestForkCopyKilledAtEveryPoint kills the server (SIGKILL) at 24 points
// of a fork's copy of a 2,000-file workspace: 20 through the test-only
// crashpoint hook (after the 1st file, at points spread over the copy,
// after its last file, after the copy before its outcome is logged, after
// the outcome is logged before the row records it) and 4 from outside, at
// delays spread over a fork's measured duration. Each next start repairs;
// after it every fork so far is either complete (the parent's files, one
// workspace/ready) or failed (one workspace/failed {interrupted}, an empty
// workspace, sends refused with workspace_not_ready), never a partial
// workspace that looks ready. One more start changes no fork's log: the
// repair happens once.
//
// On SQLite and on PostgreSQL, with the same 24 points each (a start on
// PostgreSQL is as quick). On PostgreSQL a start after a crashpoint comes
// once the dead server's leases lapsed (the start repairs), and after a
// kill from outside at once, while they are still held: the new server
// then repairs a fork when it takes its lease, by its takeover loop or by
// the first request that loads it.
func TestForkCopyKilledAtEveryPoint(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testForkCopyKilled)
}

func testForkCopyKilled(t *testing.T, b backend) {
	type point struct {
		hook  string        // crashpoint; "" for a SIGKILL from outside
		delay time.Duration // from outside: after the fork request is sent
		want  outcome
	}
	spread, outside := 17, 4
	if testing.Short() {
		spread, outside = 3, 1
	}
	var points []point
	for i := range spread + 1 {
		points = append(points, point{hook: fmt.Sprintf("%s:%d", crashpoint.ForkCopyFile, 1+i*(forkCrashFiles-1)/spread), want: outcomeFailed})
	}
	points = append(points, point{hook: crashpoint.ForkCopied + ":1", want: outcomeFailed}, point{hook: crashpoint.ForkLogged + ":1", want: outcomeReady})

	dir := t.TempDir()
	token := b.token(t, dir)
	ctx := context.Background()
	srv := startServer(t, dir, b.serverEnv()...)
	c := client.New(srv.URL, client.WithToken(token))
	parent, err := c.CreateSession(ctx, client.NewSession{Title: "parent", Mode: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	want := outcomes{}
	files := writeTree(t, parent.Workspace.Path, forkCrashFiles)
	// One fork without a kill: complete, and how long a fork takes here.
	began := time.Now()
	first, err := c.Fork(ctx, parent.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(began)
	want[first.ID] = outcomeReady
	checkForks(t, c, files, want)
	srv.kill()
	for i := range outside {
		points = append(points, point{delay: took * time.Duration(i) / time.Duration(outside), want: outcomeEither})
	}

	// adopt finds the fork the last point made (its start repaired it); a
	// kill from outside may come before the fork exists.
	adopt := func(last *point) {
		t.Helper()
		var made []string
		for id := range forkIDs(t, c, parent.ID) {
			if _, known := want[id]; !known {
				made = append(made, id)
			}
		}
		switch {
		case len(made) == 1 && last != nil:
			want[made[0]] = last.want
		case len(made) == 0 && (last == nil || last.hook == ""):
		default:
			t.Fatalf("after the last kill point: %d new forks", len(made))
		}
	}
	var last *point
	for _, p := range points {
		if last == nil || last.hook != "" {
			b.lapse(t)
		}
		if p.hook != "" {
			srv = startServer(t, dir, b.serverEnv("HARNESS_TEST_CRASH_AT="+p.hook)...)
		} else {
			srv = startServer(t, dir, b.serverEnv()...)
		}
		c = client.New(srv.URL, client.WithToken(token))
		adopt(last)
		settleForks(t, b, srv, c, want)
		checkForks(t, c, files, want)
		if p.hook != "" {
			if _, err := c.Fork(ctx, parent.ID, nil); err == nil {
				t.Fatalf("%s: the fork finished: the crash point was never reached", p.hook)
			}
			if _, exited := srv.exitErr(30 * time.Second); !exited {
				t.Fatalf("%s: the server did not die", p.hook)
			}
		} else {
			forked := make(chan struct{})
			go func() {
				defer close(forked)
				_, _ = c.Fork(ctx, parent.ID, nil) // cut by the kill, or done before it
			}()
			time.Sleep(p.delay)
			srv.kill()
			<-forked
		}
		last = &p
	}

	srv = startServer(t, dir, b.serverEnv()...)
	c = client.New(srv.URL, client.WithToken(token))
	adopt(last)
	settleForks(t, b, srv, c, want)
	heads := checkForks(t, c, files, want)
	srv.kill()
	b.lapse(t)
	srv = startServer(t, dir, b.serverEnv()...)
	c = client.New(srv.URL, client.WithToken(token))
	again := checkForks(t, c, files, want)
	if !maps.Equal(heads, again) {
		t.Fatalf("a further start changed the forks' logs: %v, then %v", heads, again)
	}
	failed := 0
	for _, id := range slices.Collect(maps.Keys(want)) {
		s, err := c.GetSession(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if s.Workspace.State != "" {
			failed++
		}
	}
	t.Logf("%d kill points (a fork took %v): %d forks failed as interrupted, %d complete", len(points), took, failed, len(want)-failed)
}

// outcome is what a fork's copy must have ended as after the repair.
type outcome string

const (
	outcomeReady  outcome = "ready"  // complete and ready
	outcomeFailed outcome = "failed" // failed as interrupted
	outcomeEither outcome = "either" // the kill came from outside: either, never partial
)

// outcomes maps fork ids to the outcome each must have.
type outcomes map[string]outcome

// settleForks waits, on PostgreSQL, until no fork made so far is
// preparing: a fork whose dead owner's lease was still held at the start
// is repaired once this server took it over. On SQLite the start repairs
// before it serves: checkForks sees that at once.
func settleForks(t *testing.T, b backend, srv *serverProc, c *client.Client, want outcomes) {
	t.Helper()
	if b.dsn == "" {
		return
	}
	waited := false
	defer func() {
		if waited {
			t.Log("a fork was repaired after the start, once its lease was taken over")
		}
	}()
	stuck := ""
	if !poll.Wait(t, func() bool {
		for id := range want {
			s, err := c.GetSession(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if s.Workspace.State == "preparing" {
				waited, stuck = true, id
				return false
			}
		}
		return true
	}, poll.Within(30*time.Second)) {
		t.Fatalf("fork %s is still preparing:\n%s", stuck, srv.logs)
	}
}

// checkForks checks every fork made so far (want): it returns each
// fork's event count.
func checkForks(t *testing.T, c *client.Client, files map[string]string, want outcomes) map[string]int {
	t.Helper()
	ctx := context.Background()
	heads := map[string]int{}
	for id, o := range want {
		s, err := c.GetSession(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		evs := events(t, c, id)
		heads[id] = len(evs)
		var readies, failures []client.Event
		for _, e := range evs {
			switch e.Type {
			case "workspace/ready":
				readies = append(readies, e)
			case "workspace/failed":
				failures = append(failures, e)
			}
		}
		if o == outcomeEither {
			o = outcomeFailed
			if s.Workspace.State == "" {
				o = outcomeReady
			}
		}
		if o == outcomeReady {
			if len(readies) != 1 || len(failures) != 0 || s.Workspace.State != "" {
				t.Fatalf("fork %s: %d ready, %d failed, state %q; want a ready workspace", id, len(readies), len(failures), s.Workspace.State)
			}
			if got := readTree(t, s.Workspace.Path); !maps.Equal(got, files) {
				t.Fatalf("fork %s is ready with %d of the parent's %d files", id, len(got), len(files))
			}
			continue
		}
		if len(failures) != 1 || len(readies) != 0 || s.Workspace.State != "interrupted" ||
			!strings.Contains(string(failures[0].Data), `"interrupted":true`) {
			t.Fatalf("fork %s: %d ready, %d failed, state %q; want it failed as interrupted", id, len(readies), len(failures), s.Workspace.State)
		}
		if got := readTree(t, s.Workspace.Path); len(got) != 0 {
			t.Fatalf("fork %s failed with %d files left in its workspace", id, len(got))
		}
		_, err = c.SendMessage(ctx, id, "hello", "followup")
		if client.CodeOf(err) != "workspace_not_ready" || !strings.Contains(err.Error(), "delete this session") {
			t.Fatalf("fork %s: a send got %v, want workspace_not_ready saying what to do", id, err)
		}
	}
	return heads
}

// forkIDs lists the forks of parent.
func forkIDs(t *testing.T, c *client.Client, parent string) map[string]bool {
	t.Helper()
	l, err := c.ListSessions(context.Background(), client.ListOptions{Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, s := range l.Sessions {
		if s.ParentID == parent {
			out[s.ID] = true
		}
	}
	return out
}

// writeTree writes n small files in nested directories under root and
// returns them (path → content).
func writeTree(t *testing.T, root string, n int) map[string]string {
	t.Helper()
	files := map[string]string{}
	for i := range n {
		rel := filepath.Join(fmt.Sprintf("d%02d", i%40), fmt.Sprintf("e%d", i%7), fmt.Sprintf("f%04d.txt", i))
		content := fmt.Sprintf("file %d\n%s", i, strings.Repeat("x", i%200))
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, rel), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		files[rel] = content
	}
	return files
}

// readTree reads the regular files under root (path → content), leaving
// out a .git directory.
func readTree(t *testing.T, root string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		files[rel] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
