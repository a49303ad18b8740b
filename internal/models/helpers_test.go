package models

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"harness/internal/session"
)

// pgDSNEnv names the PostgreSQL server the store tests also run against.
const pgDSNEnv = "HARNESS_TEST_POSTGRES_DSN"

// forEachDB runs fn against a fresh SQLite database and, when
// HARNESS_TEST_POSTGRES_DSN is set, against a fresh PostgreSQL schema.
func forEachDB(t *testing.T, fn func(t *testing.T, db *DB)) {
	t.Helper()
	t.Run(DriverSQLite, func(t *testing.T) {
		t.Parallel()
		fn(t, openSQLiteTest(t))
	})
	dsn := os.Getenv(pgDSNEnv)
	if dsn == "" {
		return
	}
	t.Run(DriverPostgres, func(t *testing.T) {
		t.Parallel()
		fn(t, openPostgresTest(t, dsn))
	})
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// testWriter sends log lines to t.Log, so they show only for failed tests.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}

func openSQLiteTest(t *testing.T) *DB {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data", "harness.db")
	db, err := Open(t.Context(), testLogger(t), Config{DSN: path})
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// openPostgresTest creates a schema of its own, opens the store with
// search_path set to it and drops it when the test ends.
func openPostgresTest(t *testing.T, dsn string) *DB {
	t.Helper()
	schemaDSN, _ := postgresSchema(t, dsn)
	db, err := Open(t.Context(), testLogger(t), Config{Driver: DriverPostgres, DSN: schemaDSN})
	if err != nil {
		t.Fatalf("open postgres: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// postgresSchema creates a schema dropped when the test ends; it returns
// the DSN that uses it and an admin connection whose statements go to it.
func postgresSchema(t *testing.T, dsn string) (string, *sql.DB) {
	t.Helper()
	ctx := context.Background()
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "t_" + hex.EncodeToString(b[:])
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatalf("postgres: %v", err)
	}
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	_ = admin.Close()
	schemaDSN := dsn + " search_path=" + schema
	if admin, err = sql.Open("pgx", schemaDSN); err != nil {
		t.Fatalf("postgres: %v", err)
	}
	t.Cleanup(func() {
		defer admin.Close()
		if _, err := admin.ExecContext(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema: %v", err)
		}
	})
	return schemaDSN, admin
}

// newTestStore opens a writer and a store on db; the writer is closed at
// cleanup.
func newTestStore(t *testing.T, db *DB, opts WriterOptions) *Store {
	t.Helper()
	w := NewWriter(testLogger(t), db, opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = w.Close(ctx)
	})
	return NewStore(testLogger(t), db, w)
}

func mustCreate(t *testing.T, s *Store, sess *Session) *Session {
	t.Helper()
	if err := s.CreateSession(t.Context(), sess); err != nil {
		t.Fatalf("create session: %v", err)
	}
	return sess
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// ev builds an event with the given data (any JSON-encodable value).
func ev(seq int64, typ session.Type, data any) session.Event {
	raw, err := json.Marshal(data)
	if err != nil {
		panic(err)
	}
	e := session.Event{Seq: seq, Time: 1_700_000_000_000 + seq, Type: typ, Data: raw}
	if session.IsSurface(typ) {
		e.SurfaceOp = session.Append()
	}
	return e
}

// variedEvent returns event seq of a session with data that exercises the
// encoding: unicode, HTML characters, escapes, surface fields.
func variedEvent(sessionID string, seq int64) session.Event {
	switch seq % 5 {
	case 0:
		return ev(seq, session.TypeUserMessage, map[string]any{
			"id": fmt.Sprintf("m-%s-%d", sessionID, seq), "role": "user",
			"content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("héllo <b>%d</b> & \"quotes\" \u2028 ✓", seq)}},
			"source":  map[string]any{"kind": "user", "userId": "u1"},
		})
	case 1:
		e := ev(seq, session.TypeAssistantMessage, map[string]any{
			"turn": 1, "step": 1,
			"message": map[string]any{"id": "a", "role": "assistant", "content": []any{map[string]any{"type": "text", "text": "ok"}},
				"source": map[string]any{"kind": "model", "provider": "p", "model": "m"}},
			"usage": map[string]any{"inputTokens": 10, "outputTokens": 5},
		})
		e.SourceEventSeqs = []int64{}
		return e
	case 2:
		e := ev(seq, session.TypeToolResult, map[string]any{"turn": 1, "step": 1, "big": 1e300, "neg": -12.5})
		e.SurfaceOp = session.Replace(seq-2, seq-1)
		e.SourceEventSeqs = []int64{seq - 2, seq - 1}
		return e
	case 3:
		e := ev(seq, "plugin/unknown", map[string]any{"nested": map[string]any{"a": []any{nil, true, "x\ty"}}})
		e.Ignorable = true
		return e
	default:
		return ev(seq, session.TypeAssistantChunk, map[string]any{
			"turn": 1, "step": 1, "chunk": map[string]any{"type": "text-delta", "index": 0, "text": "δ"},
		})
	}
}

// mustMarshal is the body the writer stores for ev.
func mustMarshal(t *testing.T, ev session.Event) []byte {
	t.Helper()
	b, err := session.MarshalEvent(ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
