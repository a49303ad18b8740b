package models

import (
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readOnlyBackends are a fresh SQLite file and, with
// HARNESS_TEST_POSTGRES_DSN, a fresh PostgreSQL schema, as configs a
// second open can use.
func readOnlyBackends(t *testing.T) map[string]func(t *testing.T) Config {
	out := map[string]func(t *testing.T) Config{
		DriverSQLite: func(t *testing.T) Config { return Config{DSN: filepath.Join(t.TempDir(), "harness.db")} },
	}
	if dsn := os.Getenv(pgDSNEnv); dsn != "" {
		out[DriverPostgres] = func(t *testing.T) Config {
			schemaDSN, _ := postgresSchema(t, dsn)
			return Config{Driver: DriverPostgres, DSN: schemaDSN}
		}
	} else {
		t.Log("!!! PostgreSQL variant skipped: set " + pgDSNEnv + " (.ci/run does) !!!")
	}
	return out
}

// OpenReadOnly next to a server's open database (on SQLite the server
// holds the lock file): it reads the server's events as the server's own
// store does, finds sessions by id and unambiguous prefix, and cannot
// write.
func TestOpenReadOnlyNextToTheServer(t *testing.T) {
	for name, mk := range readOnlyBackends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := mk(t)
			ctx := ctxTimeout(t, 30*time.Second)
			rw, err := Open(ctx, testLogger(t), cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = rw.Close() })
			s := newTestStore(t, rw, WriterOptions{})
			for _, id := range []string{"abcd1111-0000-4000-8000-000000000001", "abcd2222-0000-4000-8000-000000000002", "ef000000-0000-4000-8000-000000000003"} {
				mustCreate(t, s, &Session{ID: id, OwnerID: "u1", Title: "t"})
			}
			const id = "ef000000-0000-4000-8000-000000000003"
			for seq := range int64(40) {
				s.W.Enqueue(id, variedEvent(id, seq))
			}
			if err := s.W.Flush(ctx, id); err != nil {
				t.Fatal(err)
			}
			want, err := s.EventsSince(ctx, id, -1, 0)
			if err != nil || len(want) != 40 {
				t.Fatalf("the server's store reads %d events: %v", len(want), err)
			}

			ro, err := OpenReadOnly(ctx, testLogger(t), cfg)
			if err != nil {
				t.Fatalf("read-only open next to the server: %v", err)
			}
			defer ro.Close()
			rs := NewStore(testLogger(t), ro, nil)
			got, err := rs.EventsSince(ctx, id, 9, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 30 {
				t.Fatalf("read-only: %d events after seq 9, want 30", len(got))
			}
			for i, ev := range got {
				if w := want[i+10]; string(mustMarshal(t, ev)) != string(mustMarshal(t, w)) {
					t.Fatalf("read-only seq %d:\n%s\nthe server's store:\n%s", ev.Seq, mustMarshal(t, ev), mustMarshal(t, w))
				}
			}

			for _, tt := range []struct{ arg, want, err string }{
				{id, id, ""},
				{"ef", id, ""},
				{"abcd1", "abcd1111-0000-4000-8000-000000000001", ""},
				{"abcd", "", "several sessions"},
				{"0000", "", "not found"},
				{"%", "", "not found"},     // not a LIKE pattern
				{"ABCD1", "", "not found"}, // ids are lower case
				{"", "", "not found"},
			} {
				got, err := rs.SessionIDByPrefix(ctx, tt.arg)
				if got != tt.want || tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
					t.Errorf("SessionIDByPrefix(%q) = %q, %v; want %q, %q", tt.arg, got, err, tt.want, tt.err)
				}
				if tt.err == "not found" && !errors.Is(err, ErrNotFound) {
					t.Errorf("SessionIDByPrefix(%q): %v is not ErrNotFound", tt.arg, err)
				}
			}

			title := "changed"
			if err := rs.UpdateSession(ctx, id, SessionUpdate{Title: &title}); err == nil {
				t.Fatal("a write through the read-only store succeeded")
			}
			if sess, err := s.GetSession(ctx, id); err != nil || sess.Title != "t" {
				t.Fatalf("after the refused write the title is %v %v", sess, err)
			}
		})
	}
}

// A database this build has not migrated is refused with what to do,
// rather than read with queries its tables do not answer; a missing SQLite
// file is not created.
func TestOpenReadOnlyRefusesAnOldSchema(t *testing.T) {
	for name, mk := range readOnlyBackends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := mk(t)
			ctx := ctxTimeout(t, 30*time.Second)
			if cfg.Driver == "" {
				if _, err := OpenReadOnly(ctx, nil, cfg); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("a missing file: %v, want ErrNotExist", err)
				}
				if _, err := os.Stat(cfg.DSN); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("the read-only open created the file: %v", err)
				}
				db, err := sql.Open("sqlite3", cfg.DSN)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := db.Exec("CREATE TABLE events (id INTEGER)"); err != nil {
					t.Fatal(err)
				}
				_ = db.Close()
			}
			_, err := OpenReadOnly(ctx, nil, cfg)
			if err == nil || !strings.Contains(err.Error(), "start the server once to migrate it") {
				t.Fatalf("an unmigrated database: %v, want a refusal saying to migrate", err)
			}
		})
	}
}
