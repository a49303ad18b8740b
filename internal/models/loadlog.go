package models

import (
	"context"
	"errors"
	"fmt"

	"harness/internal/session"
)

// LoadLog rebuilds a stored session as a live session.Log whose Sink is the
// writer, applies crash repair once (the closers are stored through the
// Sink) and flushes them. It returns the log and the closers it appended;
// loading a repaired or balanced session appends nothing.
//
// It is for cold loads: a session already live in this process must not be
// loaded again, since both logs would append the same seqs.
func (s *Store) LoadLog(ctx context.Context, id string, clock func() int64) (*session.Log, []session.Event, error) {
	if s.W == nil {
		return nil, nil, errors.New("load session log: store has no writer")
	}
	// Events still queued for the session must be in the database before it
	// is read. A refusal means an earlier in-memory log diverged from the
	// stored one, which is exactly what reloading resolves.
	if err := s.W.Flush(ctx, id); err != nil && !errors.Is(err, ErrSeqMismatch) {
		return nil, nil, fmt.Errorf("load session %s: flush queued events: %w", id, err)
	}
	sess, err := s.GetSession(ctx, id)
	if err != nil {
		return nil, nil, fmt.Errorf("load session: %w", err)
	}
	events, err := s.EventsSince(ctx, id, -1, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("load session: %w", err)
	}
	s.W.Reset(id)
	log, err := session.Load(sess.header(), events, session.Options{
		Clock: clock,
		Sink:  func(ev session.Event) { s.W.Enqueue(id, ev) },
		// Stored events were validated when appended, and decodeRange
		// hands over Data the log may keep.
		Trusted: true,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("load session %s: %w", id, err)
	}
	closers, err := log.Repair()
	if err != nil {
		return nil, nil, fmt.Errorf("load session %s: %w", id, err)
	}
	if len(closers) > 0 {
		if err := s.W.Flush(ctx, id); err != nil {
			return nil, nil, fmt.Errorf("load session %s: store repair closers: %w", id, err)
		}
	}
	return log, closers, nil
}

// ReadLog loads a stored session as a log that only follows the store: no
// crash repair, no Sink. A replica mirrors a session another replica owns
// this way, ingesting the owner's later events as they are committed
// (session.Log.Ingest).
func (s *Store) ReadLog(ctx context.Context, id string) (*session.Log, error) {
	sess, err := s.GetSession(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("read session: %w", err)
	}
	events, err := s.EventsSince(ctx, id, -1, 0)
	if err != nil {
		return nil, fmt.Errorf("read session: %w", err)
	}
	l, err := session.Load(sess.header(), events, session.Options{Trusted: true})
	if err != nil {
		return nil, fmt.Errorf("read session %s: %w", id, err)
	}
	return l, nil
}

// header is the log header of a stored session.
func (sess *Session) header() session.Header {
	return session.Header{
		ID:            sess.ID,
		CreatedAt:     sess.CreatedAt.UnixMilli(),
		Cwd:           sess.Workspace,
		ParentSession: sess.ParentID,
		SeedLength:    sess.SeedLength,
	}
}
