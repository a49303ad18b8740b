package ws

import (
	"context"
	"sync"

	"harness/internal/auth"
	"harness/internal/service"
	"harness/internal/session"
)

// subscription is one connection following one session.
type subscription struct {
	c      *conn
	t      *topic
	id     string
	render bool        // wants html
	batch  bool        // wants session/events frames
	class  viewerClass // whose fragments it gets
	// next is the first seq the live tail may send: replay and the client
	// cover everything before it.
	next int64

	ctx    context.Context // ends with unsubscribe or the connection
	cancel context.CancelFunc
	done   chan struct{} // closed when the replay goroutine ended

	// Guarded by t.mu.
	holding   bool   // replay running: live frames wait in held
	held      []item // live frames that arrived during the replay
	heldBytes int64
	sent      int64 // last event seq queued for the client
	// pass is what the projector's pass in progress has for this
	// subscriber (topic.deliverLocked sends it; projector only).
	pass []item

	endOnce sync.Once
}

// offerLocked queues a live frame (t.mu held, projector only): held
// during the replay, dropped when the replay or the client already covers
// its seq, else added to what the pass delivers (topic.deliverLocked).
func (s *subscription) offerLocked(it item) {
	if it.seq >= 0 && it.seq < s.next {
		return
	}
	if it.run != nil && it.first < s.next {
		it.run, it.first = it.run.from(s.next), s.next
	}
	if s.holding {
		if s.heldBytes+it.size() > s.c.h.opts.HoldBytes {
			s.c.slow("hold bound")
			return
		}
		s.held = append(s.held, it)
		s.heldBytes += it.size()
		return
	}
	if it.seq > s.sent {
		s.sent = it.seq
	}
	if len(s.pass) == 0 {
		s.t.pass = append(s.t.pass, s)
	}
	s.pass = append(s.pass, it)
	s.t.passMost = max(s.t.passMost, len(s.pass))
}

// subscribe registers the subscription, answers, then replays in the
// background: events (since, from) from the in-memory log, the live state
// snapshot, the held live frames, and replay/done.
func (c *conn) subscribe(req Request) (Response, bool) {
	fail := func(err error) (Response, bool) {
		return Response{Re: req.ID, Error: service.AsError(err)}, true
	}
	since := int64(-1)
	if req.Since != nil {
		since = *req.Since
	}
	if since < -1 {
		return fail(service.Errorf(service.CodeBadRequest, "since must be -1 or a seq"))
	}
	if req.Render != "" && req.Render != RenderHTML {
		return fail(service.Errorf(service.CodeBadRequest, "render must be %q or absent", RenderHTML))
	}
	role, err := c.h.svc.Authorize(c.ctx, c.actor, req.Session, auth.ActionRead)
	if err != nil {
		return fail(err)
	}
	c.mu.Lock()
	_, dup := c.subs[req.Session]
	c.mu.Unlock()
	if dup {
		return fail(service.Errorf(service.CodeConflict, "already subscribed to this session; unsubscribe first"))
	}
	t, err := c.h.acquire(c.ctx, req.Session)
	if err != nil {
		return fail(err)
	}
	if head := t.src.Log().Len() - 1; since > head {
		c.h.release(t)
		return fail(service.Errorf(service.CodeBadRequest, "since %d is beyond the log's head %d", since, head))
	}
	ctx, cancel := context.WithCancel(c.ctx)
	s := &subscription{
		c: c, t: t, id: req.Session, render: req.Render == RenderHTML, batch: req.Batch,
		class: classOf(role, c.actor),
		ctx:   ctx, cancel: cancel, done: make(chan struct{}), holding: true, sent: since,
	}
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		cancel()
		c.h.release(t)
		return fail(service.Errorf(service.CodeUnavailable, "connection closing"))
	}
	c.subs[req.Session] = s
	c.wg.Add(1)
	c.mu.Unlock()

	t.mu.Lock()
	from := t.delivered + 1
	s.next = max(since+1, from)
	t.subs[s] = struct{}{}
	if s.render {
		t.html++
	}
	t.mu.Unlock()

	resp := Response{Re: req.ID, OK: true, Role: role}
	if m, ok := c.h.svc.LiveContext(c.ctx, req.Session); ok {
		resp.Context = &m
	}
	c.send(mustJSON(resp))
	go s.replay(since, from)
	return Response{}, false
}

// replay sends what the subscriber is missing, then releases the held
// live frames and marks the end with replay/done.
func (s *subscription) replay(since, from int64) {
	defer s.c.wg.Done()
	defer close(s.done)
	c := s.c
	if !s.replayEvents(since, from) {
		return
	}
	sent := max(since, from-1)

	ag := s.t.src
	snapshot := [][]byte{
		mustJSON(Push{Ch: ChStatus, Session: s.id, Status: ag.Status()}),
	}
	q := ag.Queue()
	snapshot = append(snapshot, mustJSON(Push{Ch: ChInbox, Session: s.id, Queue: &q}))
	for _, in := range ag.PendingInteractions() {
		snapshot = append(snapshot, mustJSON(Push{Ch: ChInteractionRequested, Session: s.id, Interaction: &in}))
	}
	snapshot = append(snapshot, mustJSON(Push{Ch: ChAllowed, Session: s.id, Tools: ag.AllowedTools()}))
	for _, f := range snapshot {
		if c.out.pushWait(s.ctx, item{frame: f, seq: -1}) != nil {
			return
		}
	}

	for {
		s.t.mu.Lock()
		if len(s.held) == 0 {
			s.holding = false
			s.sent = max(s.sent, sent)
			head := s.sent
			c.offer(item{frame: mustJSON(Push{Ch: ChReplayDone, Session: s.id, Head: &head}), seq: -1})
			s.t.mu.Unlock()
			return
		}
		batch := s.held
		s.held, s.heldBytes = nil, 0
		s.t.mu.Unlock()
		for _, it := range batch {
			if c.out.pushWait(s.ctx, it) != nil {
				return
			}
			sent = max(sent, it.seq)
		}
	}
}

// end detaches the subscription from its topic and releases it.
func (s *subscription) end() {
	s.endOnce.Do(func() {
		s.cancel()
		s.t.mu.Lock()
		if _, ok := s.t.subs[s]; ok && s.render {
			s.t.html--
		}
		delete(s.t.subs, s)
		s.held, s.heldBytes = nil, 0
		s.t.mu.Unlock()
		s.c.h.release(s.t)
	})
}

// unsubscribe stops following a session; unknown sessions are fine.
func (c *conn) unsubscribe(id string) {
	c.mu.Lock()
	s := c.subs[id]
	if s != nil {
		delete(c.subs, id)
	}
	c.mu.Unlock()
	if s != nil {
		s.end()
		<-s.done
	}
}

// drop ends a subscription the server stops (deleted session, lost
// access) and waits for its replay to stop. It reports whether the
// subscription was still the connection's, so only one caller announces
// its end.
func (c *conn) drop(s *subscription) bool {
	c.mu.Lock()
	mine := c.subs[s.id] == s
	if mine {
		delete(c.subs, s.id)
	}
	c.mu.Unlock()
	s.end()
	<-s.done
	return mine
}

// reauthorize drops the subscriptions the actor may no longer read.
func (c *conn) reauthorize() {
	c.mu.Lock()
	subs := make([]*subscription, 0, len(c.subs))
	for _, s := range c.subs {
		subs = append(subs, s)
	}
	c.mu.Unlock()
	for _, s := range subs {
		_, err := c.h.svc.Authorize(c.ctx, c.actor, s.id, auth.ActionRead)
		if err == nil {
			continue
		}
		e := service.AsError(err)
		switch e.Code {
		case service.CodeUnauthorized, service.CodeForbidden, service.CodeNotFound:
		default:
			continue // a passing failure (database busy) is no verdict
		}
		if c.drop(s) {
			c.send(mustJSON(Push{Ch: ChClosed, Session: s.id, Reason: string(e.Code), Error: e}))
		}
	}
}

// replayEvents queues the events (since, from) from the in-memory log, page
// by page: one session/event frame each, or session/events frames of up to
// ReplayPage events or about replayFrameBytes for batch subscribers. With
// html, a projection of its own renders them for this subscriber. false
// when the subscription or the connection ended.
func (s *subscription) replayEvents(since, from int64) bool {
	c := s.c
	l := s.t.src.Log()
	var proj Projector
	if s.render && c.h.projections != nil && since+1 < from {
		proj = c.h.projections(s.id, l, since+1)
	}
	page := int64(c.h.opts.ReplayPage)
	var run []*liveEvent
	runBytes := 0
	flush := func() bool {
		if len(run) == 0 {
			return true
		}
		frame := batchFrame(s.id, run, false)
		clear(run)
		run, runBytes = run[:0], 0
		return c.out.pushWait(s.ctx, item{frame: frame, seq: -1}) == nil
	}
	for seq := since + 1; seq < from; seq += page {
		for _, ev := range l.Events(seq, min(seq+page, from)) {
			raw, err := session.AppendEvent(nil, ev)
			if err != nil {
				c.h.log.Error("encode event", "session", s.id, "seq", ev.Seq, "err", err)
				continue
			}
			html := ""
			if proj != nil && c.h.apply(proj, s.id, ev) {
				html = c.h.fragment(proj, s.id, ev.Seq, s.class)
			}
			if !s.batch {
				frame := eventFrameRaw(s.id, raw)
				if html != "" {
					frame = withHTML(frame, html)
				}
				if c.out.pushWait(s.ctx, item{frame: frame, seq: ev.Seq}) != nil {
					return false
				}
				continue
			}
			if len(run) > 0 && (len(run) >= c.h.opts.ReplayPage || runBytes+len(raw)+len(html) > replayFrameBytes) {
				if !flush() {
					return false
				}
			}
			run = append(run, &liveEvent{seq: ev.Seq, raw: raw, html: html})
			runBytes += len(raw) + len(html)
		}
	}
	return flush()
}

// replayFrameBytes is about the largest session/events frame a replay
// builds (one event larger than it goes alone).
const replayFrameBytes = 256 << 10
