//go:build linux

package models

import (
	"os"
	"path/filepath"
	"testing"

	"harness/internal/testkit/proclocks"
)

// TestSQLiteKeepsItsLocks: after Open and a few commits the process still
// holds SQLite's POSIX locks on the database file and its -shm. Closing any
// descriptor of a file drops every POSIX lock the process has on it; a
// store that did so (issue 26) let an operator's sqlite3 believe it was the
// last connection, checkpoint and delete the -wal the server was still
// writing.
func TestSQLiteKeepsItsLocks(t *testing.T) {
	t.Parallel()
	db := openSQLiteTest(t)
	s := newTestStore(t, db, WriterOptions{})
	sess := mustCreate(t, s, &Session{ID: "locks", OwnerID: "u"})
	for seq := range int64(20) {
		s.Enqueue(sess.ID, variedEvent(sess.ID, seq))
		if seq%5 == 4 {
			if err := s.Flush(t.Context(), sess.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	path := dbPath(t, db)
	for _, f := range []string{path, path + "-shm"} {
		if n := posixLocks(t, os.Getpid(), f); n == 0 {
			t.Errorf("this process holds no POSIX lock on %s:\n%s", filepath.Base(f), proclocks.Table())
		}
	}
}

// dbPath is the file SQLite has open under db's writer.
func dbPath(t *testing.T, db *DB) string {
	t.Helper()
	var seq int
	var name, file string
	if err := db.w.QueryRowContext(t.Context(), "PRAGMA database_list").Scan(&seq, &name, &file); err != nil {
		t.Fatal(err)
	}
	return file
}

// posixLocks counts the POSIX locks pid holds on path.
func posixLocks(t *testing.T, pid int, path string) int {
	t.Helper()
	n, err := proclocks.Held(pid, path)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
