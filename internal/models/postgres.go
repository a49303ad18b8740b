package models

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

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
	g, err := gorm.Open(postgres.New(postgres.Config{DSN: cfg.DSN}), gormConfig(log))
	if err != nil {
		return nil, wrap(err)
	}
	pool, err := g.DB()
	if err != nil {
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
