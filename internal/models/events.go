package models

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"harness/internal/session"
)

// RawEvent is a stored event as written: Body is the JSON encoding of the
// session.Event, for replay without re-encoding.
type RawEvent struct {
	Seq  int64  `json:"seq"`
	Type string `json:"type"`
	Body []byte `json:"body"`
}

// scanRows reads the rows holding the session's events with since < seq
// [< before] in ascending order and hands each event to yield, at most limit
// events (<= 0: all). A packed run may start before since+1: the query
// starts maxRun seqs early and the events at or below since are skipped.
// The session is found by its id: its LogKey comes from the sessions row in
// the same query.
// Rows' bodies and metas are scratch memory valid during the call of fn
// only.
func (s *Store) scanRows(ctx context.Context, sessionID string, since, before int64, limit int, fn func(storedRow) error) error {
	q := `SELECT seq, n, "time", "type", meta, body FROM log_rows WHERE log_key = (SELECT log_key FROM sessions WHERE id = ?) AND seq > ?`
	args := []any{sessionID, since - maxRun}
	if before >= 0 {
		q += " AND seq < ?"
		args = append(args, before)
	}
	q += " ORDER BY seq"
	rows, err := s.DB.r.QueryContext(ctx, s.q(q), args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	var scratch []byte // decompressed groups, one at a time
	var typ, meta, body sql.RawBytes
	for rows.Next() {
		r := storedRow{scratch: &scratch}
		if err := rows.Scan(&r.seq, &r.n, &r.time, &typ, &meta, &body); err != nil {
			return err
		}
		if r.seq+int64(r.n)-1 <= since {
			continue
		}
		// The row's bytes are the driver's until the next row: fn copies
		// what it keeps, and a type is one of a few strings.
		r.typ, r.meta, r.body = internType(typ), unsafeString(meta), body
		if err := fn(r); err != nil {
			if errors.Is(err, errEnough) {
				return rows.Close()
			}
			return err
		}
	}
	return rows.Err()
}

// errEnough stops a scan early.
var errEnough = errors.New("enough rows")

// inRange reports whether seq lies in (since, before) (before < 0: no bound).
func inRange(seq, since, before int64) bool {
	return seq > since && (before < 0 || seq < before)
}

// EventsSince returns the session's events with seq > since, ascending, at
// most limit (<= 0: all).
func (s *Store) EventsSince(ctx context.Context, sessionID string, since int64, limit int) ([]session.Event, error) {
	evs, err := s.decodeRange(ctx, sessionID, since, -1, limit)
	if err != nil {
		return nil, fmt.Errorf("events of session %s: %w", sessionID, err)
	}
	return evs, nil
}

// decodeRange reads events with since < seq < before (before < 0: no upper
// bound). Reading parses no event JSON: the columns hold the envelope, and
// Data is the stored data bytes (see LogRow).
func (s *Store) decodeRange(ctx context.Context, sessionID string, since, before int64, limit int) ([]session.Event, error) {
	evs := make([]session.Event, 0, s.capHint(ctx, sessionID, since, before, limit))
	err := s.scanRows(ctx, sessionID, since, before, limit, func(r storedRow) error {
		return r.events(func(ev session.Event) error {
			if !inRange(ev.Seq, since, before) {
				if before >= 0 && ev.Seq >= before {
					return errEnough
				}
				return nil
			}
			evs = append(evs, ev)
			if limit > 0 && len(evs) == limit {
				return errEnough
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("read stored events after seq %d: %w", lastSeq(evs, since), err)
	}
	return evs, nil
}

// EventsRaw is EventsSince returning each event's stored JSON, byte for
// byte what the log sent live. The bodies share a few large buffers.
func (s *Store) EventsRaw(ctx context.Context, sessionID string, since int64, limit int) ([]RawEvent, error) {
	const chunk = 256 << 10
	n := s.capHint(ctx, sessionID, since, -1, limit)
	evs := make([]RawEvent, 0, n)
	buf := make([]byte, 0, min(n*200, chunk))
	err := s.EachEventRaw(ctx, sessionID, since, limit, func(seq int64, typ string, body []byte) error {
		if cap(buf)-len(buf) < len(body) {
			// A new buffer rather than a grown one: earlier bodies point
			// into the old, and a copy would be for nothing.
			buf = make([]byte, 0, max(chunk, len(body)))
		}
		start := len(buf)
		buf = append(buf, body...)
		evs = append(evs, RawEvent{Seq: seq, Type: typ, Body: buf[start:len(buf):len(buf)]})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return evs, nil
}

// EachEventRaw hands fn the stored JSON of each of the session's events
// with seq > since, in order, at most limit (<= 0: all), without collecting
// them: body is scratch memory, valid during the call.
func (s *Store) EachEventRaw(ctx context.Context, sessionID string, since int64, limit int, fn func(seq int64, typ string, body []byte) error) error {
	var buf []byte
	n := 0
	err := s.scanRows(ctx, sessionID, since, -1, limit, func(r storedRow) error {
		return r.entries(func(e *entry) error {
			if e.seq <= since {
				return nil
			}
			var err error
			if buf, err = e.appendRaw(buf[:0]); err != nil {
				return err
			}
			if err := fn(e.seq, e.typ, buf); err != nil {
				return err
			}
			if n++; limit > 0 && n == limit {
				return errEnough
			}
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("raw events of session %s: %w", sessionID, err)
	}
	return nil
}

// capHint sizes a result slice: growing a 10,000-event slice by appends
// costs more than the extra head lookup.
func (s *Store) capHint(ctx context.Context, sessionID string, since, before int64, limit int) int {
	n := int64(limit)
	if limit <= 0 {
		if n = before - since - 1; before < 0 {
			head, err := s.Head(ctx, sessionID)
			if err != nil {
				return 0
			}
			n = head - since
		}
	}
	return int(min(max(n, 0), 1<<16))
}

func lastSeq(evs []session.Event, since int64) int64 {
	if len(evs) == 0 {
		return since
	}
	return evs[len(evs)-1].Seq
}

func isNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }
