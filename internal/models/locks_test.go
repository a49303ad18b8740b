//go:build linux

package models

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
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
			t.Errorf("this process holds no POSIX lock on %s:\n%s", filepath.Base(f), procLocks(t))
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

// posixLocks counts the POSIX (fcntl) locks pid holds on path's inode.
// /proc/locks names a file as MAJ:MIN:INODE, the device numbers in hex:
//
//	3: POSIX  ADVISORY  READ 10827 fe:00:9978211 1073741826 1073742335
//
// Lines with "->" are requests still waiting, not locks held.
func posixLocks(t *testing.T, pid int, path string) int {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	dev := uint64(st.Dev)
	id := fmt.Sprintf("%02x:%02x:%d", unix.Major(dev), unix.Minor(dev), st.Ino)
	n := 0
	sc := bufio.NewScanner(strings.NewReader(procLocks(t)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 || f[1] != "POSIX" || f[4] != strconv.Itoa(pid) || f[5] != id {
			continue
		}
		n++
	}
	return n
}

func procLocks(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		t.Fatalf("read the kernel's lock table: %v", err)
	}
	return string(b)
}
