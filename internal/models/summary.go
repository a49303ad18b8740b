package models

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"harness/internal/llm"
	"harness/internal/session"
)

// SessionSummary is a session's metadata plus figures from its log.
type SessionSummary struct {
	ID        string `json:"id"`
	Title     string `json:"title"`
	OwnerID   string `json:"ownerId"`
	ParentID  string `json:"parentId,omitempty"`
	Workspace string `json:"workspace,omitempty"`
	Provider  string `json:"provider,omitempty"`
	Model     string `json:"model,omitempty"`
	Mode      string `json:"mode,omitempty"`
	Archived  bool   `json:"archived"`
	Head      int64  `json:"head"`   // last stored seq, -1 when empty
	Events    int64  `json:"events"` // stored events (head+1: seqs are contiguous)
	Turns     int64  `json:"turns"`
	Messages  int64  `json:"messages"` // user/message + assistant/message events
	// LastActivity is the time (epoch ms) of the last stored event, 0 when
	// the log is empty.
	LastActivity int64     `json:"lastActivity"`
	CreatedAt    time.Time `json:"createdAt"`
	UpdatedAt    time.Time `json:"updatedAt"`
	Usage        llm.Usage `json:"usage"` // summed over assistant/message usage
}

// Summary reads the session row and the log figures. Counts and usage come
// from the boundary index, so the cost grows with messages, not chunks.
func (s *Store) Summary(ctx context.Context, sessionID string) (SessionSummary, error) {
	sess, err := s.GetSession(ctx, sessionID)
	if err != nil {
		return SessionSummary{}, err
	}
	sum := SessionSummary{
		ID: sess.ID, Title: sess.Title, OwnerID: sess.OwnerID, ParentID: sess.ParentID,
		Workspace: sess.Workspace, Provider: sess.Provider, Model: sess.Model, Mode: sess.Mode,
		Archived: sess.Archived, Head: sess.Head, Events: sess.Head + 1,
		CreatedAt: sess.CreatedAt, UpdatedAt: sess.UpdatedAt,
	}
	wrap := func(err error) error { return fmt.Errorf("summary of session %s: %w", sessionID, err) }
	if sess.Head < 0 {
		return sum, nil
	}
	if sum.LastActivity, err = s.eventTime(ctx, sessionID, sess.Head); err != nil {
		return sum, wrap(err)
	}
	rows, err := s.DB.r.QueryContext(ctx, s.q(`SELECT type, count(*) FROM log_rows WHERE log_key = (SELECT log_key FROM sessions WHERE id = ?) AND `+
		boundaryFilter+` GROUP BY type`), sessionID)
	if err != nil {
		return sum, wrap(err)
	}
	defer rows.Close()
	for rows.Next() {
		var typ session.Type
		var n int64
		if err := rows.Scan(&typ, &n); err != nil {
			return sum, wrap(err)
		}
		switch typ {
		case session.TypeTurnStart:
			sum.Turns = n
		case session.TypeUserMessage, session.TypeAssistantMessage:
			sum.Messages += n
		}
	}
	if err := rows.Err(); err != nil {
		return sum, wrap(err)
	}
	if sum.Usage, err = s.usage(ctx, sessionID); err != nil {
		return sum, wrap(err)
	}
	return sum, nil
}

// usage sums the usage of the session's assistant messages.
func (s *Store) usage(ctx context.Context, sessionID string) (llm.Usage, error) {
	var total llm.Usage
	rows, err := s.DB.r.QueryContext(ctx, s.q(`SELECT body FROM log_rows WHERE log_key = (SELECT log_key FROM sessions WHERE id = ?) AND `+
		boundaryFilter+` AND type = 'assistant/message'`), sessionID)
	if err != nil {
		return total, err
	}
	defer rows.Close()
	var body []byte
	for rows.Next() {
		if err := rows.Scan(&body); err != nil {
			return total, err
		}
		var probe struct {
			Usage *llm.Usage `json:"usage"`
		}
		// A body that does not decode has no usage to count; it is still
		// a stored event, so it does not fail the summary.
		if json.Unmarshal(body, &probe) == nil && probe.Usage != nil {
			total = total.Add(*probe.Usage)
		}
	}
	return total, rows.Err()
}

// eventTime is the time of the event at seq (0 when there is none).
func (s *Store) eventTime(ctx context.Context, sessionID string, seq int64) (int64, error) {
	var t int64
	err := s.scanRows(ctx, sessionID, seq-1, seq+1, 1, func(r storedRow) error {
		return r.events(func(ev session.Event) error {
			if ev.Seq == seq {
				t = ev.Time
				return errEnough
			}
			return nil
		})
	})
	return t, err
}
