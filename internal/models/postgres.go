package models

import (
	"context"
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
	if err := migrate(ctx, db); err != nil {
		return nil, wrap(err)
	}
	return db, nil
}
