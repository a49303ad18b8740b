package main

import (
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"harness/client"
	"harness/internal/crashpoint"
	"harness/internal/testkit/poll"
)

// TestCloneKilledAtEveryPoint kills the server at 20 points while it
// clones a local 800-file repository: through the crashpoint hook at the
// clone's first git lines, after git finished before the outcome is logged, and after it
// is logged before the row records it; and with a plain SIGKILL from
// outside at delays spread over a clone's measured duration. After each
// next start the clone is ready with exactly the repository's files and
// one workspace/ready (a clone cut short starts over in its emptied
// workspace) or visibly failed, never ready and partial, never settled
// twice.
//
// On SQLite and on PostgreSQL, with the same points. On PostgreSQL each
// start comes once the dead server's leases lapsed: a clone a dead replica
// left is restarted only by a start, never at a takeover (the old owner's
// git may still write if it only hung; docs/lifecycle.md).
func TestCloneKilledAtEveryPoint(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testCloneKilled)
}

func testCloneKilled(t *testing.T, b backend) {
	dir, root := t.TempDir(), t.TempDir()
	// The clone runs as the sandbox's user, who must reach the data
	// directory and the source (a root outside the data directory).
	for _, d := range []string{filepath.Dir(dir), dir, root} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	repo := filepath.Join(root, "repo")
	want := writeTree(t, repo, 800)
	commitAll(t, repo)
	token := b.token(t, dir)
	env := b.serverEnv("HARNESS_WORKSPACE_ROOTS=" + root)
	ctx := context.Background()
	clone := client.NewSession{Title: "clone", Mode: "auto", Workspace: client.WorkspaceRequest{Kind: "clone", Source: repo}}

	// One clone without a kill measures how long a clone takes here.
	srv := startServer(t, dir, env...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the last server's log:\n%s", srv.logs.String())
		}
	})
	c := client.New(srv.URL, client.WithToken(token))
	began := time.Now()
	s, err := c.CreateSession(ctx, clone)
	if client.CodeOf(err) == "unavailable" {
		t.Skipf("SKIPPED LOUDLY: this machine has no usable sandbox, so the server refuses clones: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if !checkClone(t, c, s.ID, want) {
		t.Fatal("a clone with no kill failed")
	}
	took := time.Since(began)
	srv.kill()

	type point struct {
		hook  string        // crashpoint; "" for a SIGKILL from outside
		delay time.Duration // after the create returned
	}
	points := []point{
		{hook: crashpoint.CloneProgress + ":1"},
		{hook: crashpoint.CloneProgress + ":2"},
		{hook: crashpoint.CloneDone + ":1"},
		{hook: crashpoint.CloneLogged + ":1"},
	}
	// 20 points on SQLite; on PostgreSQL each point also waits for the
	// killed server's leases to lapse, so 10 there.
	outside := 16
	if b.name == "postgres" {
		outside = 6
	}
	if testing.Short() {
		outside = 2
	}
	for i := range outside {
		points = append(points, point{delay: took * time.Duration(i) / time.Duration(outside)})
	}
	ids := []string{s.ID}
	for _, p := range points {
		b.lapse(t)
		if p.hook != "" {
			srv = startServer(t, dir, append(slices.Clone(env), "HARNESS_TEST_CRASH_AT="+p.hook)...)
		} else {
			srv = startServer(t, dir, env...)
		}
		c = client.New(srv.URL, client.WithToken(token))
		s, err := c.CreateSession(ctx, clone)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
		if p.hook != "" {
			if _, exited := srv.exitErr(30 * time.Second); !exited {
				t.Fatalf("%s: the server did not die", p.hook)
			}
		} else {
			time.Sleep(p.delay)
			srv.kill()
		}
		b.lapse(t)
		srv = startServer(t, dir, env...)
		c = client.New(srv.URL, client.WithToken(token))
		checkClone(t, c, s.ID, want)
		srv.kill()
	}

	// A further start settles nothing again.
	b.lapse(t)
	srv = startServer(t, dir, env...)
	c = client.New(srv.URL, client.WithToken(token))
	for _, id := range ids {
		checkClone(t, c, id, want)
	}
	t.Logf("%d kill points; a clone took %v", len(points), took)
}

// checkClone waits for a clone to settle and checks the invariant:
// it is ready with exactly the repository's files and one workspace/ready,
// or it failed visibly (state failed, one workspace/failed in its log);
// never ready and partial, never settled twice. A clone a kill cut short
// starts over at the next start and normally ends ready; the rare visible
// failure is logged with its reason.
func checkClone(t *testing.T, c *client.Client, id string, files map[string]string) (ready bool) {
	t.Helper()
	ctx := context.Background()
	var s client.Session
	if !poll.Wait(t, func() bool {
		var err error
		s, err = c.GetSession(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return s.Workspace.State != "preparing"
	}, poll.Within(120*time.Second)) {
		var types []string
		for _, e := range events(t, c, id) {
			types = append(types, e.Type)
		}
		t.Fatalf("clone %s still preparing after 120 s; its log: %v", id, types)
	}
	readies, failures := 0, 0
	var why []string
	for _, e := range events(t, c, id) {
		switch e.Type {
		case "workspace/ready":
			readies++
		case "workspace/failed":
			failures++
			why = append(why, string(e.Data))
		}
	}
	if s.Workspace.State == "failed" && readies == 0 && failures == 1 {
		t.Logf("clone %s failed visibly after a kill: %v", id, why)
		return false
	}
	if s.Workspace.State != "" || readies != 1 || failures != 0 {
		t.Fatalf("clone %s: state %q, %d ready, %d failed %v; want ready once, or failed once", id, s.Workspace.State, readies, failures, why)
	}
	if got := readTree(t, s.Workspace.Path); !maps.Equal(got, files) {
		t.Fatalf("clone %s is ready with %d of the repository's %d files", id, len(got), len(files))
	}
	return true
}

// commitAll makes dir a git repository with everything in it committed.
func commitAll(t *testing.T, dir string) {
	t.Helper()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "."},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "files"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
