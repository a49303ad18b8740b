package models

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"gorm.io/gorm"
)

// Driver names accepted in Config.Driver.
const (
	DriverSQLite   = "sqlite"
	DriverPostgres = "postgres"
)

// ErrLocked is wrapped by Open when another process holds the database.
var ErrLocked = errors.New("database is locked by another process")

// Config selects and tunes the database.
type Config struct {
	Driver string // "sqlite" (default) or "postgres"
	DSN    string // sqlite: file path (e.g. data/harness.db); postgres: a libpq DSN
	// ReadConns is the reader pool size (sqlite default 4; postgres: the
	// shared pool holds ReadConns+1 connections, default 10).
	ReadConns int
	// BusyTimeout is SQLite's busy_timeout (default 5s): how long a
	// statement waits for a lock held by another connection. SQLite only.
	BusyTimeout time.Duration
	// IdleTxTimeout is PostgreSQL's idle_in_transaction_session_timeout
	// (default 4s): the server ends a transaction whose client stopped
	// sending for that long. A replica paused (or wedged) mid-commit would
	// otherwise hold its row locks, on the session row among them, and
	// block the takeover of its sessions for as long as it stays paused.
	// Replicas set it under the lease TTL. PostgreSQL only.
	IdleTxTimeout time.Duration
}

// DefaultIdleTxTimeout is Config.IdleTxTimeout's default: half the default
// lease TTL.
const DefaultIdleTxTimeout = 4 * time.Second

// DB is an open database: W is the single writer, R the reader pool. On
// PostgreSQL both are the same pool.
type DB struct {
	W      *gorm.DB
	R      *gorm.DB
	Driver string

	w, r    *sql.DB     // the pools under W and R, for raw SQL
	dsn     string      // PostgreSQL: for the notification listener's own connection
	schema  string      // PostgreSQL: the current schema (names the notification channels)
	closers []io.Closer // released in order by Close
}

// Open opens the database, pings it and runs the migrations. On SQLite it
// creates the parent directory, keeps the database file and its -wal/-shm
// siblings at mode 0600 (created so, tightened when looser), and holds an
// exclusive lock on <path>.lock while the DB is open, so a second server
// process on the same file fails with ErrLocked ("open database <path>:
// database is locked by another process"), as does a database another
// connection keeps write-locked beyond BusyTimeout.
func Open(ctx context.Context, log *slog.Logger, cfg Config) (*DB, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	switch cfg.Driver {
	case "", DriverSQLite:
		return openSQLite(ctx, log, cfg)
	case DriverPostgres:
		return openPostgres(ctx, log, cfg)
	default:
		return nil, fmt.Errorf("open database: unknown driver %q", cfg.Driver)
	}
}

// Ping checks that the writer and the readers answer.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.w.PingContext(ctx); err != nil {
		return fmt.Errorf("ping writer: %w", err)
	}
	if db.r == db.w {
		return nil
	}
	if err := db.r.PingContext(ctx); err != nil {
		return fmt.Errorf("ping readers: %w", err)
	}
	return nil
}

// Close closes the pools (readers first, so the writer's close can
// checkpoint the SQLite WAL) and releases the process lock.
func (db *DB) Close() error {
	var errs []error
	for _, c := range db.closers {
		if err := c.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	db.closers = nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close database: %w", err)
	}
	return nil
}

// gormConfig is shared by both drivers: UTC microsecond timestamps (the
// precision both databases keep, so keyset cursors compare equal after a
// round trip), no default transaction around single statements, slog
// logging without SQL arguments.
func gormConfig(log *slog.Logger) *gorm.Config {
	return &gorm.Config{
		Logger:                 newGormLogger(log),
		NowFunc:                now,
		SkipDefaultTransaction: true,
		TranslateError:         true,
	}
}

// now is the timestamp the store writes.
func now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }
