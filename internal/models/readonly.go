package models

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
)

// OpenReadOnly opens the database for an operator's reads next to running
// servers: no lock file, no migration, no write. On SQLite it is a
// read-only connection (mode=ro, query_only) that takes only the shared
// locks every reader takes, which in WAL mode never block the server's
// writer; on PostgreSQL every transaction is read-only. W is R, so a write
// through either fails rather than reaching the database. The schema must
// be at least this build's: the reads assume its tables.
func OpenReadOnly(ctx context.Context, log *slog.Logger, cfg Config) (_ *DB, err error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var db *DB
	switch cfg.Driver {
	case "", DriverSQLite:
		db, err = openSQLiteReadOnly(cfg)
	case DriverPostgres:
		db, err = openPostgresReadOnly(cfg)
	default:
		return nil, fmt.Errorf("open database: unknown driver %q", cfg.Driver)
	}
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = db.Close()
		}
	}()
	if db.R, err = gorm.Open(db.dialector(), gormConfig(log)); err != nil {
		return nil, fmt.Errorf("open database read-only: %w", err)
	}
	db.W = db.R
	if err := db.r.PingContext(ctx); err != nil {
		return nil, fmt.Errorf("open database read-only: %w", err)
	}
	cur, err := readSchemaVersion(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("open database read-only: read schema version: %w", err)
	}
	if cur.Version < len(schemaSteps) {
		return nil, fmt.Errorf("open database read-only: its schema is older than this build's (step %d of %d): start the server once to migrate it", cur.Version, len(schemaSteps))
	}
	return db, nil
}

func openSQLiteReadOnly(cfg Config) (*DB, error) {
	path := cfg.DSN
	if path == "" {
		return nil, errors.New("open database: empty sqlite path")
	}
	// mode=ro would not create a missing file, but SQLite's error would
	// not name it.
	if st, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	} else if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("open database %s: not a regular file", path)
	}
	busy := cfg.BusyTimeout
	if busy <= 0 {
		busy = defaultBusyTimeout
	}
	r, err := sql.Open("sqlite3", sqliteDSN(path, url.Values{
		"mode":          {"ro"},
		"_query_only":   {"1"},
		"_busy_timeout": {fmt.Sprint(busy.Milliseconds())},
	}))
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	r.SetMaxOpenConns(1)
	return &DB{Driver: DriverSQLite, w: r, r: r, closers: []io.Closer{r}}, nil
}

func openPostgresReadOnly(cfg Config) (*DB, error) {
	if cfg.DSN == "" {
		return nil, errors.New("open database: empty postgres DSN")
	}
	pc, err := pgx.ParseConfig(cfg.DSN)
	if err != nil {
		// The DSN may hold a password: never echo it.
		return nil, errors.New("open postgres database: the DSN does not parse")
	}
	pc.RuntimeParams["default_transaction_read_only"] = "on"
	pool := stdlib.OpenDB(*pc)
	pool.SetMaxOpenConns(2)
	return &DB{Driver: DriverPostgres, w: pool, r: pool, closers: []io.Closer{pool}}, nil
}

// dialector is GORM's dialect over the open reader pool.
func (db *DB) dialector() gorm.Dialector {
	if db.Driver == DriverPostgres {
		return postgres.New(postgres.Config{Conn: db.r})
	}
	return sqlite.New(sqlite.Config{Conn: db.r})
}
