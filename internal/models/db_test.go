package models

import (
	"bytes"
	"database/sql"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"
)

func TestOpenMigratesAndReopens(t *testing.T) {
	t.Parallel()
	forEachDB(t, func(t *testing.T, db *DB) {
		if err := db.Ping(t.Context()); err != nil {
			t.Fatalf("ping: %v", err)
		}
		for _, m := range AllModels() {
			if !db.W.Migrator().HasTable(m) {
				t.Errorf("table for %T missing", m)
			}
		}
		if !db.W.Migrator().HasIndex(&LogRow{}, "idx_log_rows_boundaries") {
			t.Error("partial index idx_events_boundaries missing")
		}
		// Migrations are idempotent.
		if err := migrate(t.Context(), db); err != nil {
			t.Fatalf("second migrate: %v", err)
		}
	})
}

func TestOpenSQLiteSettings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "nested", "deeper", "harness.db")
	db, err := Open(t.Context(), nil, Config{DSN: path, ReadConns: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database file not created: %v", err)
	}
	pragma := func(g *sql.DB, name string) string {
		t.Helper()
		var v string
		if err := g.QueryRow("PRAGMA " + name).Scan(&v); err != nil {
			t.Fatalf("pragma %s: %v", name, err)
		}
		return v
	}
	for _, tc := range []struct {
		pool *sql.DB
		name string
		want string
	}{
		{db.w, "journal_mode", "wal"},
		{db.w, "synchronous", "1"}, // NORMAL
		{db.w, "busy_timeout", "5000"},
		{db.w, "foreign_keys", "1"},
		{db.w, "query_only", "0"},
		{db.r, "query_only", "1"},
		{db.r, "busy_timeout", "5000"},
	} {
		if got := pragma(tc.pool, tc.name); got != tc.want {
			t.Errorf("%s = %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := db.w.Stats().MaxOpenConnections; got != 1 {
		t.Errorf("writer max open conns = %d, want 1", got)
	}
	if got := db.r.Stats().MaxOpenConnections; got != 3 {
		t.Errorf("reader max open conns = %d, want 3", got)
	}
	if _, err := db.r.Exec("CREATE TABLE nope (x int)"); err == nil {
		t.Error("reader pool accepted a write")
	}
}

func TestOpenLockedByAnotherProcess(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "harness.db")
	cmd, stdin, _ := startHelper(t, "hold", path, "opened")

	_, err := Open(t.Context(), nil, Config{DSN: path})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("open while held: err = %v, want ErrLocked", err)
	}
	want := "open database " + path + ": database is locked by another process"
	if err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}

	// Once the other process is gone the database opens again.
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	db, err := Open(t.Context(), nil, Config{DSN: path})
	if err != nil {
		t.Fatalf("open after release: %v", err)
	}
	_ = db.Close()
}

func TestOpenLockedBySQLiteConnection(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "harness.db")
	// A foreign connection (not a Harness process, so no lock file) holding
	// an exclusive transaction.
	other, err := sql.Open("sqlite3", "file:"+path+"?_txlock=exclusive")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	tx, err := other.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("CREATE TABLE held (x int)"); err != nil {
		t.Fatal(err)
	}
	_, err = Open(t.Context(), nil, Config{DSN: path, BusyTimeout: 50 * time.Millisecond})
	if !errors.Is(err, ErrLocked) || !strings.HasPrefix(err.Error(), "open database "+path+": ") {
		t.Fatalf("open while locked: err = %v, want wrapped ErrLocked", err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	db, err := Open(t.Context(), nil, Config{DSN: path, BusyTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatalf("open after unlock: %v", err)
	}
	_ = db.Close()
}

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "plain-file")
	if err := os.WriteFile(file, bytes.Repeat([]byte("not a database "), 512), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"directory", Config{DSN: dir}, "open database " + dir + ": "},
		{"parent is a file", Config{DSN: filepath.Join(file, "x.db")}, "open database " + filepath.Join(file, "x.db") + ": "},
		{"not a database", Config{DSN: file}, "open database " + file + ": "},
		{"empty path", Config{}, "empty sqlite path"},
		{"memory", Config{DSN: ":memory:"}, "want a plain file path"},
		{"unknown driver", Config{Driver: "mysql", DSN: "x"}, `unknown driver "mysql"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db, err := Open(t.Context(), nil, tc.cfg)
			if err == nil {
				_ = db.Close()
				t.Fatal("open succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

func TestGormLogNeverShowsArguments(t *testing.T) {
	t.Parallel()
	forEachDB(t, func(t *testing.T, db *DB) {
		var buf bytes.Buffer
		log := slog.New(slog.NewTextHandler(&buf, nil))
		g := db.W.Session(&gorm.Session{Logger: newGormLogger(log)})
		err := g.Exec("INSERT INTO no_such_table (x) VALUES (?)", "s3cret-argument").Error
		if err == nil {
			t.Fatal("insert into a missing table succeeded")
		}
		out := buf.String()
		if !strings.Contains(out, "sql error") || !strings.Contains(out, "no_such_table") {
			t.Errorf("error not logged with its statement: %q", out)
		}
		if strings.Contains(out, "s3cret-argument") || !strings.Contains(out, "VALUES (") {
			t.Errorf("log shows an SQL argument: %q", out)
		}
	})
}
