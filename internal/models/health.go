package models

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrNotWritable: the database does not take writes now (a full disk, a
// read-only file system, a lock another process holds); the wrapped error
// says which.
var ErrNotWritable = errors.New("the database does not take writes")

// probeEvery bounds the write probes Writable makes while writes fail.
const probeEvery = time.Second

// Writable reports whether the database takes writes: nil, or ErrNotWritable
// wrapping the last failed write. While the writer has events queued it
// keeps trying them and its outcome is the answer; with nothing queued
// Writable probes with a write of its own (at most once a second), so the
// answer comes back by itself once the cause is gone.
func (s *Store) Writable(ctx context.Context) error {
	err, queued := s.W.failing()
	if err == nil {
		return nil
	}
	// One probe at a time: callers meanwhile get the last failure rather
	// than queue behind a write that may wait out the busy timeout.
	if !queued && s.probeMu.TryLock() {
		if time.Since(s.probedAt) >= probeEvery {
			s.probedAt = time.Now()
			if perr := s.probe(ctx); perr == nil {
				s.W.recovered()
				err = nil
			} else if ctx.Err() == nil {
				err = perr
			}
		}
		s.probeMu.Unlock()
	}
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrNotWritable, err)
}

// Ping reports whether the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.DB.Ping(ctx) }

// probe writes one settings row in a transaction of its own.
func (s *Store) probe(ctx context.Context) error {
	now := time.Now().UTC()
	return s.DB.W.WithContext(ctx).Exec(s.q(`INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)
ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`),
		"store.write_probe", fmt.Sprint(now.UnixNano()), now).Error
}

// failing returns the error of the last batch when it failed (nil once a
// batch or a probe succeeds), and whether events wait to be tried again.
func (w *Writer) failing() (error, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.failErr, w.npending > 0
}

// recovered clears the failure after a probe write succeeded.
func (w *Writer) recovered() {
	w.mu.Lock()
	w.failErr = nil
	w.mu.Unlock()
}

// IsWriteLocked reports whether err says a write waited out the busy
// timeout on SQLite's write lock (SQLITE_BUSY or SQLITE_LOCKED): the server
// has one write connection, so another process holds the lock (an
// operator's shell with a write open, a script, a checkpoint).
func IsWriteLocked(err error) bool { return isSQLiteBusy(err) }
