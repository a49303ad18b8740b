package models

import (
	"context"

	"harness/internal/session"
)

// Enqueue hands an appended event of a session to the batched writer: cheap,
// never blocks. Callers go through the Store, not its writer, so how events
// are batched stays the store's business.
func (s *Store) Enqueue(sessionID string, ev session.Event) { s.W.Enqueue(sessionID, ev) }

// Flush returns once every event enqueued for sessionID is durable.
func (s *Store) Flush(ctx context.Context, sessionID string) error { return s.W.Flush(ctx, sessionID) }

// Forget drops a deleted (or replaced) session's queued events; waiting
// flushes return ErrNotFound.
func (s *Store) Forget(sessionID string) { s.W.Forget(sessionID) }
