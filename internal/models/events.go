package models

import (
	"context"
	"database/sql"
	"encoding/json"
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

// rangeQuery selects a session's events with since < seq [< before] in
// ascending order; limit <= 0 means all.
func (s *Store) rangeQuery(ctx context.Context, cols, sessionID string, since, before int64, limit int) (*sql.Rows, error) {
	q := "SELECT " + cols + " FROM events WHERE session_id = ? AND seq > ?"
	args := []any{sessionID, since}
	if before >= 0 {
		q += " AND seq < ?"
		args = append(args, before)
	}
	q += " ORDER BY seq"
	if limit > 0 {
		q += " LIMIT ?"
		args = append(args, limit)
	}
	return s.DB.r.QueryContext(ctx, s.q(q), args...)
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

// decodeRange reads and decodes events with since < seq < before (before <
// 0: no upper bound).
func (s *Store) decodeRange(ctx context.Context, sessionID string, since, before int64, limit int) ([]session.Event, error) {
	rows, err := s.rangeQuery(ctx, "body", sessionID, since, before, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	evs := make([]session.Event, 0, s.capHint(ctx, sessionID, since, before, limit))
	var body sql.RawBytes // Unmarshal copies what it keeps (Data), so no copy here
	for rows.Next() {
		if err := rows.Scan(&body); err != nil {
			return nil, err
		}
		evs = append(evs, session.Event{})
		if err := json.Unmarshal(body, &evs[len(evs)-1]); err != nil {
			return nil, fmt.Errorf("decode stored event after seq %d: %w", lastSeq(evs[:len(evs)-1], since), err)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return evs, nil
}

// EventsRaw is EventsSince returning the stored bodies byte for byte.
func (s *Store) EventsRaw(ctx context.Context, sessionID string, since int64, limit int) ([]RawEvent, error) {
	rows, err := s.rangeQuery(ctx, `seq, "type", body`, sessionID, since, -1, limit)
	if err != nil {
		return nil, fmt.Errorf("raw events of session %s: %w", sessionID, err)
	}
	defer rows.Close()
	evs := make([]RawEvent, 0, s.capHint(ctx, sessionID, since, -1, limit))
	for rows.Next() {
		var ev RawEvent
		if err := rows.Scan(&ev.Seq, &ev.Type, &ev.Body); err != nil {
			return nil, fmt.Errorf("raw events of session %s: %w", sessionID, err)
		}
		evs = append(evs, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("raw events of session %s: %w", sessionID, err)
	}
	return evs, nil
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
