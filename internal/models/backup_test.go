//go:build linux

package models

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"harness/internal/testkit/poll"

	"harness/internal/testkit/proclocks"
)

// TestBackupSQLiteWhileWriting backs up the database of a second process
// that is writing: the copy opens cleanly and holds every event committed
// before the backup started, the writer keeps its locks, and after a
// SIGKILL the database still holds everything the copy holds.
func TestBackupSQLiteWhileWriting(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "data", "harness.db")
	cmd, _, line := startHelper(t, "crash", path, "flushed ")
	var flushed int64
	if _, err := fmt.Sscanf(line, "flushed %d", &flushed); err != nil {
		t.Fatalf("helper said %q: %v", line, err)
	}
	// Mid-stream: the helper is past its flushed events, still appending.
	peek, err := sql.Open("sqlite3", "file:"+path+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	var before int64
	poll.Wait(t, func() bool {
		err := peek.QueryRow("SELECT head FROM sessions WHERE id = ?", crashSession).Scan(&before)
		return err == nil && before > flushed+200
	}, poll.Within(10*time.Second), poll.Every(2*time.Millisecond))
	if err := peek.Close(); err != nil {
		t.Fatal(err)
	}

	dst := filepath.Join(dir, "backup.db")
	if err := BackupSQLite(t.Context(), path, dst); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(dst); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("backup file: %v, mode %v; want 0600", err, st.Mode())
	}
	for _, f := range []string{path, path + "-shm"} {
		if posixLocks(t, cmd.Process.Pid, f) == 0 {
			t.Fatalf("the writer lost its POSIX locks on %s after the backup:\n%s", filepath.Base(f), proclocks.Table())
		}
	}
	copied := backedUpLog(t, dst)
	if int64(len(copied)) <= before {
		t.Fatalf("backup holds %d events; %d were committed before it started", len(copied), before+1)
	}
	if err := BackupSQLite(t.Context(), path, dst); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second backup to the same file: err = %v, want it refused as existing", err)
	}

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	after := backedUpLog(t, path)
	if len(after) < len(copied) {
		t.Fatalf("after SIGKILL the database holds %d events, fewer than the backup's %d", len(after), len(copied))
	}
	for i, r := range copied {
		if after[i].Seq != r.Seq || !bytes.Equal(after[i].Body, r.Body) {
			t.Fatalf("event %d differs between the backup and the database after the restart", i)
		}
	}
	t.Logf("committed before the backup %d, in the backup %d, after the kill %d", before+1, len(copied), len(after))
}

// backedUpLog opens a database with Open (as a server does) and returns its
// crash session's log, checked to be the helper's appends, gap-free.
func backedUpLog(t *testing.T, path string) []RawEvent {
	t.Helper()
	db, err := Open(t.Context(), testLogger(t), Config{DSN: path})
	if err != nil {
		t.Fatalf("open %s: %v", filepath.Base(path), err)
	}
	defer db.Close()
	s := NewStore(testLogger(t), db, nil)
	raw, err := s.EventsRaw(t.Context(), crashSession, -1, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range raw {
		if r.Seq != int64(i) || !bytes.Equal(r.Body, mustMarshal(t, variedEvent(crashSession, int64(i)))) {
			t.Fatalf("%s: row %d (seq %d) is not the event appended there", filepath.Base(path), i, r.Seq)
		}
	}
	if head, err := s.Head(t.Context(), crashSession); err != nil || head != int64(len(raw))-1 {
		t.Fatalf("%s: head %d (%v) with %d rows", filepath.Base(path), head, err, len(raw))
	}
	return raw
}

func TestBackupSQLiteRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "harness.db")
	if err := NewStore(testLogger(t), openAt(t, db), nil).CreateSession(t.Context(), &Session{ID: "s", OwnerID: "u"}); err != nil {
		t.Fatal(err)
	}
	existing := filepath.Join(dir, "existing.db")
	if err := os.WriteFile(existing, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, db, dst string
		want          error
	}{
		{"existing file", db, existing, fs.ErrExist},
		{"the database itself", db, db, fs.ErrExist},
		{"no database", filepath.Join(dir, "missing.db"), filepath.Join(dir, "new.db"), fs.ErrNotExist},
		{"missing directory", db, filepath.Join(dir, "nope", "b.db"), fs.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := BackupSQLite(t.Context(), tc.db, tc.dst); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
	if b, err := os.ReadFile(existing); err != nil || string(b) != "keep me" {
		t.Fatalf("the existing file changed: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "new.db")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a failed backup left its file behind: %v", err)
	}
}

func openAt(t *testing.T, path string) *DB {
	t.Helper()
	db, err := Open(t.Context(), testLogger(t), Config{DSN: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}
