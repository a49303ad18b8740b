package service

import (
	"bufio"
	"context"
	"encoding/json"
	"io"

	"harness/internal/auth"
	"harness/internal/session"
)

// Events returns the session's events with seq > since, at most limit (0:
// DefaultEventsLimit), and the log's head. A live session is read from its
// in-memory log, which is complete (the store may lag by a few ms).
func (s *Service) Events(ctx context.Context, a *auth.Actor, id string, since int64, limit int) (EventPage, error) {
	if since < -1 {
		return EventPage{}, Errorf(CodeBadRequest, "since must be -1 or a seq")
	}
	if limit < 0 || limit > MaxEventsLimit {
		return EventPage{}, Errorf(CodeBadRequest, "limit must be between 1 and %d", MaxEventsLimit)
	}
	if limit == 0 {
		limit = DefaultEventsLimit
	}
	if _, err := s.Authorize(ctx, a, id, auth.ActionRead); err != nil {
		return EventPage{}, err
	}
	if ag, ok := s.mgr.Lookup(id); ok {
		l := ag.Log()
		head := l.Len() - 1
		evs := l.Events(since+1, since+1+int64(limit))
		page := EventPage{Events: make([]json.RawMessage, 0, len(evs)), Head: head}
		for _, ev := range evs {
			b, err := session.AppendEvent(nil, ev)
			if err != nil {
				return EventPage{}, s.fail(ctx, "events", err)
			}
			page.Events = append(page.Events, b)
		}
		return page, nil
	}
	head, err := s.store.Head(ctx, id)
	if err != nil {
		return EventPage{}, s.fail(ctx, "events", err)
	}
	raw, err := s.store.EventsRaw(ctx, id, since, limit)
	if err != nil {
		return EventPage{}, s.fail(ctx, "events", err)
	}
	page := EventPage{Events: make([]json.RawMessage, 0, len(raw)), Head: head}
	for _, r := range raw {
		page.Events = append(page.Events, r.Body)
	}
	return page, nil
}

// exportPage is how many stored events Export reads at a time.
const exportPage = 1000

// Export writes the session's whole log as JSON lines (one stored event per
// line, byte for byte), after flushing what is queued. It reads the store
// page by page, so memory stays flat for long logs. Nothing is written when
// authorization fails.
func (s *Service) Export(ctx context.Context, a *auth.Actor, id string, w io.Writer) error {
	if _, err := s.Authorize(ctx, a, id, auth.ActionRead); err != nil {
		return err
	}
	if err := s.store.W.Flush(ctx, id); err != nil {
		return s.fail(ctx, "export: flush", err)
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	since := int64(-1)
	for {
		raw, err := s.store.EventsRaw(ctx, id, since, exportPage)
		if err != nil {
			return s.fail(ctx, "export", err)
		}
		for _, r := range raw {
			if _, err := bw.Write(r.Body); err != nil {
				return err
			}
			if err := bw.WriteByte('\n'); err != nil {
				return err
			}
			since = r.Seq
		}
		if len(raw) < exportPage {
			return bw.Flush()
		}
	}
}
