package service

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strconv"

	"harness/internal/auth"
	"harness/internal/session"
)

// Events returns the session's events with seq > since, at most limit (0:
// DefaultEventsLimit), and the log's head. A live session is read from its
// in-memory log, which is complete (the store may lag by a few ms).
func (s *Service) Events(ctx context.Context, a *auth.Actor, id string, since int64, limit int) (EventPage, error) {
	page := EventPage{Events: []json.RawMessage{}}
	head, err := s.eachEvent(ctx, a, id, since, limit, func(body []byte) error {
		page.Events = append(page.Events, bytes.Clone(body))
		return nil
	})
	page.Head = head
	return page, err
}

// WriteEvents writes what Events returns, as its JSON, to the writer
// begin returns, streaming it: a page of thousands of events is never held
// whole. begin is called once the request is found valid and allowed,
// before the first byte; an error after it means a cut page.
func (s *Service) WriteEvents(ctx context.Context, a *auth.Actor, id string, since int64, limit int, begin func() io.Writer) error {
	var bw *bufio.Writer
	n := 0
	head, err := s.eachEvent(ctx, a, id, since, limit, func(body []byte) error {
		if bw == nil {
			bw = bufio.NewWriterSize(begin(), 64<<10)
			_, _ = bw.WriteString(`{"events":[`)
		}
		if n++; n > 1 {
			_ = bw.WriteByte(',')
		}
		_, err := bw.Write(body)
		return err
	})
	if err != nil {
		return err
	}
	if bw == nil {
		bw = bufio.NewWriterSize(begin(), 256)
		_, _ = bw.WriteString(`{"events":[`)
	}
	_, _ = bw.WriteString(`],"head":`)
	_, _ = bw.Write(strconv.AppendInt(nil, head, 10))
	_, _ = bw.WriteString("}\n")
	return bw.Flush()
}

// eachEvent checks an events request and hands fn each event's JSON
// (scratch memory), returning the log's head.
func (s *Service) eachEvent(ctx context.Context, a *auth.Actor, id string, since int64, limit int, fn func(body []byte) error) (int64, error) {
	if since < -1 {
		return 0, Errorf(CodeBadRequest, "since must be -1 or a seq")
	}
	if limit < 0 || limit > MaxEventsLimit {
		return 0, Errorf(CodeBadRequest, "limit must be between 1 and %d", MaxEventsLimit)
	}
	if limit == 0 {
		limit = DefaultEventsLimit
	}
	if _, err := s.Authorize(ctx, a, id, auth.ActionRead); err != nil {
		return 0, err
	}
	if err := s.elsewhere(ctx, id); err != nil {
		return 0, err
	}
	if ag, ok := s.mgr.Lookup(id); ok {
		l := ag.Log()
		var buf []byte
		for _, ev := range l.Events(since+1, since+1+int64(limit)) {
			var err error
			if buf, err = session.AppendEvent(buf[:0], ev); err != nil {
				return 0, s.fail(ctx, "events", err)
			}
			if err := fn(buf); err != nil {
				return 0, err
			}
		}
		return l.Len() - 1, nil
	}
	head, err := s.store.Head(ctx, id)
	if err != nil {
		return 0, s.fail(ctx, "events", err)
	}
	err = s.store.EachEventRaw(ctx, id, since, limit, func(_ int64, _ string, body []byte) error { return fn(body) })
	if err != nil {
		return 0, s.fail(ctx, "events", err)
	}
	return head, nil
}

// exportPage is how many stored events Export reads at a time.
const exportPage = 1000

// Export writes the session's whole log as JSON lines (one stored event per
// line, byte for byte), after flushing what is queued. It reads the store
// page by page, so memory stays flat for long logs. Nothing is written when
// authorization fails.
func (s *Service) Export(ctx context.Context, a *auth.Actor, id string, w io.Writer) error {
	if _, err := s.Authorize(ctx, a, id, auth.ActionExport); err != nil {
		return err
	}
	if err := s.store.Flush(ctx, id); err != nil {
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
