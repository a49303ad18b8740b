package models

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
)

// openPostgres opens one pool that serves as writer and readers: PostgreSQL
// has row-level locking, so the batched writer does not need a dedicated
// connection.
func openPostgres(ctx context.Context, log *slog.Logger, cfg Config) (_ *DB, err error) {
	if cfg.DSN == "" {
		return nil, errors.New("open database: empty postgres DSN")
	}
	// The DSN may hold a password: never echo it in errors.
	wrap := func(err error) error { return fmt.Errorf("open postgres database: %w", err) }
	pc, err := pgx.ParseConfig(cfg.DSN)
	if err != nil {
		return nil, errors.New("open postgres database: the DSN does not parse")
	}
	idle := cfg.IdleTxTimeout
	if idle <= 0 {
		idle = DefaultIdleTxTimeout
	}
	pc.RuntimeParams["idle_in_transaction_session_timeout"] = strconv.FormatInt(max(idle.Milliseconds(), 1), 10)
	pool := stdlib.OpenDB(*pc)
	g, err := gorm.Open(postgres.New(postgres.Config{Conn: pool}), gormConfig(log))
	if err != nil {
		_ = pool.Close()
		return nil, wrap(err)
	}
	db := &DB{W: g, R: g, Driver: DriverPostgres, w: pool, r: pool, dsn: cfg.DSN, closers: []io.Closer{pool}}
	defer func() {
		if err != nil {
			_ = db.Close()
		}
	}()
	n := cfg.ReadConns
	if n <= 0 {
		n = 9
	}
	pool.SetMaxOpenConns(n + 1)
	pool.SetMaxIdleConns(n + 1)
	if err := pool.PingContext(ctx); err != nil {
		return nil, wrap(err)
	}
	if err := pool.QueryRowContext(ctx, `SELECT current_schema()`).Scan(&db.schema); err != nil {
		return nil, wrap(err)
	}
	if err := migrateLocked(ctx, pool, db); err != nil {
		return nil, wrap(err)
	}
	return db, nil
}

// migrateLocked runs migrate holding a PostgreSQL advisory lock named
// after the schema. Replicas that start together on a new or older
// database (a compose up, a rolling upgrade) would otherwise run the same
// DDL at once, and all but one fail ("duplicate key value ... pg_type");
// with the lock they migrate one at a time and the later ones find the
// schema current. The lock is the session's: it is released when the
// connection holding it closes, so a process dying mid-migration frees it.
func migrateLocked(ctx context.Context, pool *sql.DB, db *DB) error {
	conn, err := pool.Conn(ctx)
	if err != nil {
		return fmt.Errorf("migrate: lock: %w", err)
	}
	defer conn.Close()
	key := "harness migrate " + db.schema
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock(hashtext($1))`, key); err != nil {
		return fmt.Errorf("migrate: lock: %w", err)
	}
	defer func() {
		// A failed unlock: the connection is discarded (ErrBadConn from
		// Raw), not pooled, so closing it releases the lock.
		if _, err := conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(hashtext($1))`, key); err != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}()
	return migrate(ctx, db)
}
