// Package authtest helps tests that need real accounts: fresh databases
// (SQLite, and PostgreSQL when HARNESS_TEST_POSTGRES_DSN is set), a settable
// clock, a fast Service and session rows to authorize against.
package authtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"harness/internal/auth"
	"harness/internal/models"
)

// PostgresDSNEnv names the PostgreSQL server store tests also run against.
const PostgresDSNEnv = "HARNESS_TEST_POSTGRES_DSN"

// ForEachDB runs fn as a parallel subtest on a fresh SQLite database and,
// when HARNESS_TEST_POSTGRES_DSN is set, on a fresh PostgreSQL schema.
func ForEachDB(t *testing.T, fn func(t *testing.T, db *models.DB)) {
	t.Helper()
	t.Run(models.DriverSQLite, func(t *testing.T) {
		t.Parallel()
		fn(t, OpenSQLite(t))
	})
	dsn := os.Getenv(PostgresDSNEnv)
	if dsn == "" {
		return
	}
	t.Run(models.DriverPostgres, func(t *testing.T) {
		t.Parallel()
		fn(t, OpenPostgres(t, dsn))
	})
}

// OpenSQLite opens a fresh database file in t.TempDir.
func OpenSQLite(t *testing.T) *models.DB {
	t.Helper()
	path := filepath.Join(t.TempDir(), "harness.db")
	db, err := models.Open(t.Context(), Logger(t), models.Config{DSN: path})
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// OpenPostgres opens the store in a schema of its own, dropped at cleanup.
func OpenPostgres(t *testing.T, dsn string) *models.DB {
	t.Helper()
	ctx := context.Background()
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "t_auth_" + hex.EncodeToString(b[:])
	admin, err := sql.Open("pgx", dsn) // registered by gorm's postgres driver
	if err != nil {
		t.Fatalf("postgres: %v", err)
	}
	t.Cleanup(func() { _ = admin.Close() })
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	db, err := models.Open(ctx, Logger(t), models.Config{Driver: models.DriverPostgres, DSN: dsn + " search_path=" + schema})
	if err != nil {
		t.Fatalf("open postgres: %v", err)
	}
	t.Cleanup(func() {
		_ = db.Close()
		if _, err := admin.ExecContext(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema: %v", err)
		}
	})
	return db
}

// Logger writes warnings and errors to t.Log.
func Logger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}

// Clock is a settable clock, safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock starts at a fixed, realistic instant.
func NewClock() *Clock {
	return &Clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

// Now is the clock's time; pass it as auth.Options.Now.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// NewService builds a Service on db with the cheapest bcrypt cost and the
// given clock (nil = real time) and logger (nil = Logger(t)).
func NewService(t *testing.T, db *models.DB, clock *Clock, log *slog.Logger) *auth.Service {
	t.Helper()
	if log == nil {
		log = Logger(t)
	}
	opts := auth.Options{BcryptCost: bcrypt.MinCost}
	if clock != nil {
		opts.Now = clock.Now
	}
	return auth.NewService(log, models.NewAuthStore(db), opts)
}

// CreateSession inserts a bare session row owned by ownerID and returns its id.
func CreateSession(t *testing.T, db *models.DB, ownerID string) string {
	t.Helper()
	s := models.Session{OwnerID: ownerID}
	if err := models.NewStore(nil, db, nil).CreateSession(t.Context(), &s); err != nil {
		t.Fatalf("create session: %v", err)
	}
	return s.ID
}

// MustUser creates a user or fails the test.
func MustUser(t *testing.T, svc *auth.Service, name, password string, admin bool) auth.User {
	t.Helper()
	u, err := svc.CreateUser(t.Context(), name, password, admin)
	if err != nil {
		t.Fatalf("create user %s: %v", name, err)
	}
	return u
}
