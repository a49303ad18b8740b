package models

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
)

// Notifications between replicas (PostgreSQL LISTEN/NOTIFY). The writer
// announces new heads on HeadsChannel in its commits; replicas send their
// agents' live notifications with Notify. A Listener holds one dedicated
// connection (LISTEN needs a session of its own, outside the pool) and
// reconnects when it drops; since notifications sent meanwhile are lost,
// it reports every (re)connection so followers catch up from the table.

// Channel is the name of notification channel base on this database:
// channels are global to a PostgreSQL database, so a schema other than
// public (several deployments, or tests, on one database) gets its own.
func (db *DB) Channel(base string) string {
	if db.schema == "" || db.schema == "public" {
		return base
	}
	return base + "_" + db.schema
}

// Notify sends payload on channel base (at most about 7.8 kB).
func (db *DB) Notify(ctx context.Context, channel, payload string) error {
	if db.Driver != DriverPostgres {
		return errors.New("notify: needs PostgreSQL")
	}
	if len(payload) > notifyPayloadMax {
		return fmt.Errorf("notify %s: payload of %d bytes exceeds %d", channel, len(payload), notifyPayloadMax)
	}
	if _, err := db.w.ExecContext(ctx, `SELECT pg_notify($1, $2)`, db.Channel(channel), payload); err != nil {
		return fmt.Errorf("notify %s: %w", channel, err)
	}
	return nil
}

// NotifyPayloadMax is the largest payload Notify sends.
const NotifyPayloadMax = notifyPayloadMax

// ListenHandler receives a Listener's notifications, one at a time, on the
// listener's goroutine: it must be quick.
type ListenHandler struct {
	// Notification is one notification, on the channel base it was
	// listened to as.
	Notification func(channel, payload string)
	// Connected runs after every (re)connection, once the channels are
	// listened to: notifications sent before it may have been missed.
	Connected func()
	// Disconnected runs when the connection drops (before the reconnect's
	// backoff); nil: nothing.
	Disconnected func(err error)
}

// Listen listens to the channels until ctx ends, reconnecting with a
// backoff when the connection drops. It returns when ctx ends.
func (db *DB) Listen(ctx context.Context, log *slog.Logger, channels []string, h ListenHandler) error {
	if db.Driver != DriverPostgres || db.dsn == "" {
		return errors.New("listen: needs PostgreSQL")
	}
	backoff := 50 * time.Millisecond
	for {
		err := db.listenOnce(ctx, channels, h)
		if ctx.Err() != nil {
			return nil
		}
		if h.Disconnected != nil {
			h.Disconnected(err)
		}
		log.Warn("notification listener: connection lost; reconnecting", "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 2*time.Second)
	}
}

func (db *DB) listenOnce(ctx context.Context, channels []string, h ListenHandler) error {
	conn, err := pgx.Connect(ctx, db.dsn)
	if err != nil {
		return fmt.Errorf("connect: %w", err) // never the DSN: it may hold a password
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	base := make(map[string]string, len(channels))
	for _, ch := range channels {
		name := db.Channel(ch)
		base[name] = ch
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{name}.Sanitize()); err != nil {
			return fmt.Errorf("listen %s: %w", name, err)
		}
	}
	if h.Connected != nil {
		h.Connected()
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if h.Notification != nil {
			h.Notification(base[n.Channel], n.Payload)
		}
	}
}
