package models

import (
	"context"
	"fmt"

	"harness/internal/session"
)

const defaultPageMessages = 50

// TailPage returns a page of the session's log cut on message boundaries:
// the events of the last maxMessages user/assistant messages before seq
// `before` (-1: from the end, which includes an in-flight partial's chunks
// after the last message). hasMore reports older messages before the page;
// the next older page is TailPage(page[0].Seq, ...).
//
// The page starts at the event that opens its first counted message, so
// chunks and tool events stay on the page of their message: a user/message
// is opened by the step/start right before it, and a step/start by the
// turn/start right before it; an assistant/message by the user/message,
// step/start or turn/start before its chunks (a user message of the same
// step is therefore included, one message over the count). When no older
// message remains, the page reaches back to seq 0 so a log's leading
// non-message events belong to its first page.
func (s *Store) TailPage(ctx context.Context, sessionID string, before int64, maxMessages int) ([]session.Event, bool, error) {
	if maxMessages <= 0 {
		maxMessages = defaultPageMessages
	}
	if before == 0 || before < -1 {
		return []session.Event{}, false, nil
	}
	start, hasMore, err := s.pageStart(ctx, sessionID, before, maxMessages)
	if err != nil {
		return nil, false, fmt.Errorf("tail page of session %s: %w", sessionID, err)
	}
	evs, err := s.decodeRange(ctx, sessionID, start-1, before, 0)
	if err != nil {
		return nil, false, fmt.Errorf("tail page of session %s: %w", sessionID, err)
	}
	return evs, hasMore, nil
}

type boundary struct {
	seq int64
	typ session.Type
}

func (b boundary) message() bool {
	return b.typ == session.TypeUserMessage || b.typ == session.TypeAssistantMessage
}

// opens reports whether b, right before cur among the boundaries, opens
// cur and so belongs to the same page.
func opens(b, cur boundary) bool {
	switch cur.typ {
	case session.TypeAssistantMessage:
		return b.typ != session.TypeAssistantMessage
	case session.TypeUserMessage:
		return b.typ == session.TypeStepStart || b.typ == session.TypeTurnStart
	case session.TypeStepStart:
		return b.typ == session.TypeTurnStart
	default:
		return false
	}
}

// pageStart walks the boundary events (partial index) backwards from
// before and returns the page's first seq.
func (s *Store) pageStart(ctx context.Context, sessionID string, before int64, maxMessages int) (start int64, hasMore bool, err error) {
	q := "SELECT seq, type FROM log_rows WHERE log_key = (SELECT log_key FROM sessions WHERE id = ?) AND " + boundaryFilter
	args := []any{sessionID}
	if before > 0 {
		q += " AND seq < ?"
		args = append(args, before)
	}
	q += " ORDER BY seq DESC"
	rows, err := s.DB.r.QueryContext(ctx, s.q(q), args...)
	if err != nil {
		return 0, false, err
	}
	defer rows.Close()

	const (
		counting = iota
		opening
		searching
	)
	phase, count := counting, 0
	var cur boundary
	for rows.Next() {
		var b boundary
		if err := rows.Scan(&b.seq, &b.typ); err != nil {
			return 0, false, err
		}
		switch phase {
		case counting:
			if b.message() {
				count++
				if count == maxMessages {
					cur, phase = b, opening
				}
			}
			continue
		case opening:
			if opens(b, cur) {
				cur = b
				continue
			}
			start, phase = cur.seq, searching
			if b.typ == session.TypeAssistantMessage && cur.typ == session.TypeAssistantMessage {
				// Two assistant messages with no opener between them: keep
				// the chunks after the earlier one with the later one.
				start = b.seq + 1
			}
		}
		if b.message() {
			return start, true, rows.Close()
		}
	}
	if err := rows.Err(); err != nil {
		return 0, false, err
	}
	return 0, false, nil
}

// LastTodos is the todo list of the session's last todo/write (nil when
// there is none), read by the seq the sessions row keeps: one event, not
// the log.
func (s *Store) LastTodos(ctx context.Context, sessionID string) ([]session.Todo, error) {
	var seq int64
	err := s.DB.r.QueryRowContext(ctx, s.q("SELECT todo_seq FROM sessions WHERE id = ?"), sessionID).Scan(&seq)
	if err != nil {
		return nil, s.lookupErr("todo list of session", sessionID, err)
	}
	if seq < 0 {
		return nil, nil
	}
	evs, err := s.decodeRange(ctx, sessionID, seq-1, seq+1, 1)
	if err != nil {
		return nil, fmt.Errorf("todo list of session %s: %w", sessionID, err)
	}
	if len(evs) != 1 || evs[0].Type != session.TypeTodoWrite {
		return nil, fmt.Errorf("todo list of session %s: no todo/write at seq %d", sessionID, seq)
	}
	tw, err := session.Decode[session.TodoWrite](evs[0])
	if err != nil {
		return nil, fmt.Errorf("todo list of session %s: %w", sessionID, err)
	}
	return tw.Todos, nil
}
