package models

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"harness/internal/testkit/poll"
)

// A full disk fails writes with a clear error and keeps the events queued;
// once space is back they are committed, and a reopened database has them.
func TestWriterDiskFull(t *testing.T) {
	t.Parallel()
	dir := smallTmpfs(t)
	path := filepath.Join(dir, "h.db")
	db, err := Open(t.Context(), testLogger(t), Config{DSN: path})
	if err != nil {
		t.Fatal(err)
	}
	s := newTestStore(t, db, WriterOptions{})
	id := mustCreate(t, s, &Session{OwnerID: "o"}).ID

	filler := filepath.Join(dir, "filler")
	_ = exec.Command("dd", "if=/dev/zero", "of="+filler, "bs=1M", "count=64").Run()
	for seq := range int64(50) {
		s.W.Enqueue(id, variedEvent(id, seq))
	}
	if err := s.W.Flush(ctxTimeout(t, 10*time.Second), id); err == nil {
		t.Fatal("flush succeeded on a full disk")
	} else {
		t.Logf("full disk: %v", err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	var lastErr error
	if !poll.Wait(t, func() bool {
		lastErr = s.W.Flush(ctxTimeout(t, 10*time.Second), id)
		return lastErr == nil
	}, poll.Every(50*time.Millisecond)) {
		t.Fatalf("writes never resumed: %v", lastErr)
	}
	if head, _ := s.Head(t.Context(), id); head != 49 {
		t.Fatalf("head %d after space came back", head)
	}
	if err := s.W.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db2, err := Open(t.Context(), testLogger(t), Config{DSN: path})
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	s2 := NewStore(testLogger(t), db2, NewWriter(testLogger(t), db2, WriterOptions{}))
	evs, err := s2.EventsRaw(t.Context(), id, -1, 0)
	if err != nil || len(evs) != 50 {
		t.Fatalf("reopened: %d events, %v", len(evs), err)
	}
}

// A flush after a failed write tries again at once: it reports the outcome
// of a new attempt, not the stale error, so a recovered disk is seen by the
// next flush.
func TestWriterFlushRetriesNow(t *testing.T) {
	t.Parallel()
	db := openSQLiteTest(t)
	s := newTestStore(t, db, WriterOptions{Retries: 0})
	id := mustCreate(t, s, &Session{OwnerID: "o"}).ID
	// Fail inserts until the trigger is dropped.
	if err := db.W.Exec(`CREATE TRIGGER fail_insert BEFORE INSERT ON log_rows BEGIN SELECT RAISE(FAIL, 'disk is full'); END`).Error; err != nil {
		t.Fatal(err)
	}
	s.W.Enqueue(id, variedEvent(id, 0))
	if err := s.W.Flush(ctxTimeout(t, 10*time.Second), id); err == nil {
		t.Fatal("flush succeeded while inserts fail")
	}
	if err := db.W.Exec(`DROP TRIGGER fail_insert`).Error; err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := s.W.Flush(ctxTimeout(t, 10*time.Second), id); err != nil {
		t.Fatalf("flush after recovery: %v", err)
	}
	if waited := time.Since(start); waited > 500*time.Millisecond {
		t.Logf("note: flush waited %v", waited)
	}
	if head, _ := s.Head(t.Context(), id); head != 0 {
		t.Fatalf("head %d", head)
	}
}

// A disk that fills while a session streams: every flush that says its
// events are stored is true for every reader, and once space is back the
// database holds the whole log, across a reopen.
func TestWriterDiskFillsMidStream(t *testing.T) {
	t.Parallel()
	dir := smallTmpfs(t)
	path := filepath.Join(dir, "h.db")
	db, err := Open(t.Context(), testLogger(t), Config{DSN: path})
	if err != nil {
		t.Fatal(err)
	}
	s := newTestStore(t, db, WriterOptions{})
	id := mustCreate(t, s, &Session{OwnerID: "o"}).ID
	seq := int64(0)
	batch := func(n int) error {
		for range n {
			s.W.Enqueue(id, variedEvent(id, seq))
			seq++
		}
		return s.W.Flush(ctxTimeout(t, 10*time.Second), id)
	}
	for range 4 {
		if err := batch(5); err != nil {
			t.Fatal(err)
		}
	}
	filler := filepath.Join(dir, "filler")
	_ = exec.Command("dd", "if=/dev/zero", "of="+filler, "bs=1M", "count=64").Run()
	failed := 0
	for range 40 {
		err := batch(5)
		if err != nil {
			failed++
			continue
		}
		if head, herr := s.Head(t.Context(), id); herr != nil || head != seq-1 {
			t.Fatalf("a flush said seq %d is stored; a reader sees head %d (%v)", seq-1, head, herr)
		}
	}
	if failed == 0 {
		t.Fatal("no write failed on a full disk")
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if !poll.Wait(t, func() bool { return s.W.Flush(ctxTimeout(t, 10*time.Second), id) == nil }, poll.Every(50*time.Millisecond)) {
		t.Fatal("writes never resumed")
	}
	if head, _ := s.Head(t.Context(), id); head != seq-1 {
		t.Fatalf("head %d after space came back, want %d", head, seq-1)
	}
	if err := s.W.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db2, err := Open(t.Context(), testLogger(t), Config{DSN: path})
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	s2 := NewStore(testLogger(t), db2, NewWriter(testLogger(t), db2, WriterOptions{}))
	evs, err := s2.EventsRaw(t.Context(), id, -1, 0)
	if err != nil || int64(len(evs)) != seq {
		t.Fatalf("reopened: %d events, want %d (%v)", len(evs), seq, err)
	}
}

// smallTmpfs mounts a 16 MiB tmpfs on a fresh directory (root only).
func smallTmpfs(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED LOUDLY: mounting a tmpfs to fill the disk needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("SKIPPED LOUDLY: cannot mount a tmpfs (%v: %s)", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir
}
