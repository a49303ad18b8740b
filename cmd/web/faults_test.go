package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"harness/client"
	"harness/internal/testkit/poll"
)

// A second server on a data directory in use fails at once with a clear
// error, and the first keeps serving.
func TestDatabaseLockedByAnotherProcess(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := startServer(t, dir)
	second, err := tryStartServer(t, dir)
	if err == nil {
		t.Fatal("a second server started on the same data directory")
	}
	exit, ok := second.exitErr(10 * time.Second)
	if !ok || exit == nil {
		t.Fatalf("second server: exit %v (exited %v)", exit, ok)
	}
	if logs := second.logs.String(); !strings.Contains(logs, "locked by another process") {
		t.Fatalf("unclear error:\n%s", logs)
	}
	if res, err := httpGet(first.URL + "/readyz"); err != nil || res != 200 {
		t.Fatalf("first server stopped serving: %d %v", res, err)
	}
}

// mountTmpfs mounts a tmpfs of size on a fresh directory (root only).
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED LOUDLY: mounting a tmpfs to simulate a full or read-only disk needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("SKIPPED LOUDLY: cannot mount a tmpfs here (%v: %s)", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir
}

func remount(t *testing.T, dir, opts string) {
	t.Helper()
	if out, err := exec.Command("mount", "-o", "remount,"+opts, dir).CombinedOutput(); err != nil {
		t.Fatalf("remount %s: %v %s", opts, err, out)
	}
}

// A read-only data directory fails the start with a clear error and leaves
// the stored log as it was.
func TestReadOnlyDataDirectory(t *testing.T) {
	t.Parallel()
	dir := mountTmpfs(t, "64m")
	data := filepath.Join(dir, "data")
	token := newToken(t, data)
	srv := startServer(t, data)
	c := client.New(srv.URL, client.WithToken(token))
	s, err := c.CreateSession(context.Background(), client.NewSession{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SendMessage(context.Background(), s.ID, "hello", "followup"); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, "the turn to end", func() bool { return countTurnEnds(events(t, c, s.ID), "completed") == 1 })
	before := events(t, c, s.ID)
	_ = srv.cmd.Process.Signal(syscall.SIGTERM)
	if _, ok := srv.exitErr(20 * time.Second); !ok {
		t.Fatal("server did not stop")
	}

	remount(t, dir, "ro")
	p, err := tryStartServer(t, data)
	if err == nil {
		t.Fatal("the server started on a read-only data directory")
	}
	logs := p.logs.String()
	if !strings.Contains(logs, "read-only") {
		t.Fatalf("unclear error on a read-only data directory:\n%s", logs)
	}

	remount(t, dir, "rw")
	srv = startServer(t, data)
	c = client.New(srv.URL, client.WithToken(token))
	after := events(t, c, s.ID)
	if len(after) != len(before) {
		t.Fatalf("the log changed: %d events before, %d after", len(before), len(after))
	}
}

// A full disk makes writes fail with a clear error while the server keeps
// serving; once space is back, the queued events land and the log is whole.
func TestDiskFull(t *testing.T) {
	t.Parallel()
	dir := mountTmpfs(t, "64m")
	data := filepath.Join(dir, "data")
	token := newToken(t, data)
	srv := startServer(t, data)
	c := client.New(srv.URL, client.WithToken(token))
	ctx := context.Background()
	s, err := c.CreateSession(ctx, client.NewSession{})
	if err != nil {
		t.Fatal(err)
	}

	// Stream a long reply, and fill the disk under it: its later events
	// cannot be written. (A send on a disk already full is refused with
	// nothing kept: TestFullDiskSendsRefusedThenStoredOnce.)
	if _, err := c.SendMessage(ctx, s.ID, "long: 3000", "followup"); err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(dir, "filler")
	_ = exec.Command("dd", "if=/dev/zero", "of="+filler, "bs=1M", "count=100").Run()
	poll.Eventually(t, "a write failure to be logged", func() bool {
		return strings.Contains(srv.logs.String(), "full")
	}, poll.Within(30*time.Second))
	if code, err := httpGet(srv.URL + "/healthz"); err != nil || code != 200 {
		t.Fatalf("server stopped serving on a full disk: %d %v", code, err)
	}

	// Space comes back: the writer's retries land the queued events.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	var lastErr error
	if !poll.Wait(t, func() bool {
		// The reply is thousands of events: read every page.
		if _, lastErr = c.Events(ctx, s.ID, -1, 1); lastErr != nil {
			return false
		}
		return countTurnEnds(events(t, c, s.ID), "") >= 1
	}, poll.Within(30*time.Second), poll.Every(50*time.Millisecond)) {
		t.Fatalf("the turn never reached the store (%v)\n%s", lastErr, srv.logs.String())
	}
	log := toSession(t, events(t, c, s.ID))
	for i, ev := range log {
		if ev.Seq != int64(i) {
			t.Fatalf("gap in the log at %d", i)
		}
	}
	// A graceful stop drains the writer: everything reaches the disk now
	// that there is room.
	first := srv.logs.String()
	_ = srv.cmd.Process.Signal(syscall.SIGTERM)
	if err, ok := srv.exitErr(30 * time.Second); !ok || err != nil {
		t.Fatalf("server stop: %v (exited %v)\n%s", err, ok, srv.logs.String())
	}
	srv = startServer(t, data)
	c = client.New(srv.URL, client.WithToken(token))
	if got := toSession(t, events(t, c, s.ID)); len(got) < len(log) {
		row, err := c.GetSession(ctx, s.ID)
		t.Fatalf("events lost across the restart: %d < %d (session %+v %v)\n%s", len(got), len(log), row, err, first)
	}
}

func httpGet(url string) (int, error) {
	res, err := httpClient.Get(url)
	if err != nil {
		return 0, err
	}
	res.Body.Close()
	return res.StatusCode, nil
}
