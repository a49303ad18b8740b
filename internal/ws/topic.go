package ws

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"harness/internal/driver"
	"harness/internal/service"
	"harness/internal/session"
)

// topic is one session followed by this hub: the agent's pin, one log
// subscription, the projector goroutine and the subscribers it fans out
// to.
type topic struct {
	h     *Hub
	id    string
	ready chan struct{} // closed once open finished
	err   error         // open's error
	refs  int           // guarded by h.mu

	// src is what the topic follows: the agent here, or the mirror of a
	// session another replica owns (Remote).
	src       Followed
	release   func()
	cancelLog func()

	// The log callback and the live notifications only append here and
	// signal wake; the projector goroutine takes the batch. So nothing
	// slow runs on the appending goroutine (which may hold the agent's
	// lock), and events and live frames keep their order.
	pending *mailbox[pendingEntry] // closed by close: the projector returns

	mu   sync.Mutex
	subs map[*subscription]struct{}
	// delivered is the last seq the projector fanned out; a subscriber
	// joining now gets every later seq from the projector.
	delivered int64
	// html counts the subscribers that asked for HTML; the projection is
	// made when the first one is there.
	html int
	// proj is the topic's projection (projector goroutine only, under mu).
	proj Projector
	// gated: the topic follows a local agent and delivers only what the
	// writer stored (Hub.Stored), so no subscriber ever sees an event a
	// crash could lose and another replica's repair replace. Set by open.
	gated bool
}

// pendingEntry is an event, a live frame or a stored head waiting for
// the projector.
type pendingEntry struct {
	ev   session.Event
	live []byte // a live notification's frame; ev is unset
	// stored, when set, is the session's new stored head (a gated topic
	// fans out the log's events up to it); ev and live are unset.
	stored *int64
}

// liveEvent is one event as the projector prepared it for the batch
// subscribers of one viewer class: the writer only joins these.
type liveEvent struct {
	seq   int64
	raw   []byte // the event object, byte for byte as stored
	html  string // the class's fragment ("" without html)
	delta *delta // set for text and reasoning deltas

	// alone is the session/events frame of this event by itself, built
	// once by the first writer that sends it alone (the usual case of a
	// subscriber that keeps up) and shared by the others.
	aloneOnce sync.Once
	alone     []byte
}

// frameAlone returns the session/events frame of e by itself.
func (e *liveEvent) frameAlone(sessionID string) []byte {
	e.aloneOnce.Do(func() { e.alone = batchFrame(sessionID, []*liveEvent{e}, false) })
	return e.alone
}

// delta is what coalescing needs of a text or reasoning delta: the block
// it belongs to, its text and the envelope a merged event keeps.
type delta struct {
	kind              string
	turn, step, index int
	text              string
	env               session.Event // Data unset
}

// openTimeout bounds loading a session for its first subscriber.
const openTimeout = 30 * time.Second

// acquire returns the session's topic, opening it (pin + log subscription)
// for the first subscriber. Each acquire needs a release.
func (h *Hub) acquire(ctx context.Context, id string) (*topic, error) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, service.Errorf(service.CodeUnavailable, "server shutting down")
	}
	t, ok := h.topics[id]
	if ok {
		t.refs++
	} else {
		t = &topic{h: h, id: id, ready: make(chan struct{}), refs: 1, subs: map[*subscription]struct{}{}, delivered: -2,
			pending: newMailbox[pendingEntry]()}
		h.topics[id] = t
	}
	h.mu.Unlock()
	if !ok {
		// Opening is shared by every waiter, so it must not end with the
		// first subscriber's request.
		octx, cancel := context.WithTimeout(h.base, openTimeout)
		t.err = t.open(octx)
		cancel()
		if t.err != nil {
			h.mu.Lock()
			if h.topics[id] == t {
				delete(h.topics, id)
			}
			h.mu.Unlock()
		}
		close(t.ready)
	} else {
		select {
		case <-t.ready:
		case <-ctx.Done():
			h.release(t)
			return nil, ctx.Err()
		}
	}
	if t.err != nil {
		h.release(t)
		return nil, t.err
	}
	return t, nil
}

// open pins the agent (or follows the mirror of a session another
// replica owns), subscribes to its log and starts the projector.
func (t *topic) open(ctx context.Context) error {
	var src Followed
	ag, release, err := t.h.mgr.Pin(ctx, t.id)
	if err == nil {
		src = ag
	} else if errors.Is(err, driver.ErrNotOwner) && t.h.remote != nil {
		src, release, err = t.h.remote.Follow(ctx, t.id)
	}
	if err != nil {
		return service.AsError(err)
	}
	t.src, t.release = src, release
	if ag != nil && t.h.storedHead != nil {
		// Stored heads drive the fan-out: Hub.Stored queues each one; the
		// events up to the head stored now are replayed from the log.
		head, err := t.h.storedHead(ctx, t.id)
		if err != nil {
			release()
			return service.AsError(err)
		}
		t.mu.Lock()
		t.gated = true
		t.delivered = max(t.delivered, min(head, src.Log().Len()-1))
		t.mu.Unlock()
		go t.project()
		return nil
	}
	next, cancel := src.Log().Subscribe(t.onEvent)
	t.cancelLog = cancel
	t.mu.Lock()
	// The callback may already have queued seq >= next.
	t.delivered = max(t.delivered, next-1)
	t.mu.Unlock()
	go t.project()
	return nil
}

// Stored tells the hub that the writer stored session id's events up to
// head. With Deps.StoredHead set, subscribers of a local agent get events
// only once stored. It must not block (the writer calls it).
func (h *Hub) Stored(id string, head int64) {
	if h.storedHead == nil {
		return
	}
	h.mu.Lock()
	t := h.topics[id]
	h.mu.Unlock()
	if t != nil {
		t.pending.put(pendingEntry{stored: &head})
	}
}

// fanStored fans out the log's events up to the stored head.
func (t *topic) fanStored(head int64) {
	t.mu.Lock()
	gated, from := t.gated, t.delivered+1
	t.mu.Unlock()
	if !gated || head < from {
		return
	}
	for _, ev := range t.src.Log().Events(from, head+1) {
		t.fanEvent(ev)
	}
}

// release drops one reference; the last one closes the topic.
func (h *Hub) release(t *topic) {
	h.mu.Lock()
	t.refs--
	last := t.refs == 0
	if last && h.topics[t.id] == t {
		delete(h.topics, t.id)
	}
	h.mu.Unlock()
	if last {
		t.close()
	}
}

func (t *topic) close() {
	if t.cancelLog != nil {
		t.cancelLog()
	}
	if t.release != nil {
		t.release()
	}
	t.pending.close()
}

// onEvent runs on the appending goroutine (maybe under the agent's lock):
// it only queues the event for the projector.
func (t *topic) onEvent(ev session.Event) {
	t.pending.put(pendingEntry{ev: ev})
}

// offerLive queues a live notification behind the events before it.
func (t *topic) offerLive(frame []byte) {
	t.pending.put(pendingEntry{live: frame})
}

// project is the topic's goroutine: it takes what onEvent and offerLive
// queued and fans it out in order.
func (t *topic) project() {
	var batch []pendingEntry
	for {
		var ok bool
		if batch, ok = t.pending.take(batch, nil); !ok {
			return
		}
		for i, e := range batch {
			switch {
			case e.live != nil:
				t.fanLive(e.live)
			case e.stored != nil:
				t.fanStored(*e.stored)
			default:
				t.fanEvent(e.ev)
			}
			batch[i] = pendingEntry{}
		}
	}
}

// fanLive offers a live frame to every subscriber.
func (t *topic) fanLive(frame []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for s := range t.subs {
		s.offerLocked(item{frame: frame, seq: -1})
	}
}

// classOut is one event prepared for one viewer class.
type classOut struct {
	done  bool
	html  string
	frame []byte     // session/event frame with html (plain subscribers)
	ev    *liveEvent // batch subscribers
}

// fanEvent applies the event to the projection, encodes it once, renders
// it once per viewer class present and offers ready bytes to each
// subscriber. It runs under t.mu, so a subscriber joins either before the
// event (and gets it from here) or after (and replays it from the log).
func (t *topic) fanEvent(ev session.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.delivered = max(t.delivered, ev.Seq)
	if t.proj == nil && t.html > 0 && t.h.projections != nil {
		// Everything before ev is in the log: the log appends before it
		// calls back.
		t.proj = t.h.projections(t.id, t.src.Log(), ev.Seq)
	}
	applied := t.proj != nil && t.h.apply(t.proj, t.id, ev)
	if len(t.subs) == 0 {
		return
	}
	raw, err := session.AppendEvent(nil, ev)
	if err != nil {
		t.h.log.Error("encode event", "session", t.id, "seq", ev.Seq, "err", err)
		return
	}
	var plain []byte // the html-less session/event frame
	var plainBatch *liveEvent
	var d *delta
	decoded := false
	var classes map[viewerClass]*classOut
	for s := range t.subs {
		if s.batch && !decoded {
			d, decoded = deltaOf(ev), true
		}
		if !s.render || !applied {
			if s.batch {
				if plainBatch == nil {
					plainBatch = &liveEvent{seq: ev.Seq, raw: raw, delta: d}
				}
				s.offerLocked(item{ev: plainBatch, sub: s, seq: ev.Seq})
				continue
			}
			if plain == nil {
				plain = eventFrameRaw(t.id, raw)
			}
			s.offerLocked(item{frame: plain, seq: ev.Seq})
			continue
		}
		if classes == nil {
			classes = make(map[viewerClass]*classOut, 2)
		}
		out := classes[s.class]
		if out == nil {
			out = &classOut{}
			classes[s.class] = out
		}
		if !out.done {
			out.done = true
			out.html = t.h.fragment(t.proj, t.id, ev.Seq, s.class)
		}
		if s.batch {
			if out.ev == nil {
				out.ev = &liveEvent{seq: ev.Seq, raw: raw, html: out.html, delta: d}
			}
			s.offerLocked(item{ev: out.ev, sub: s, seq: ev.Seq})
			continue
		}
		if out.frame == nil {
			if plain == nil {
				plain = eventFrameRaw(t.id, raw)
			}
			out.frame = plain
			if out.html != "" {
				out.frame = withHTML(plain, out.html)
			}
		}
		s.offerLocked(item{frame: out.frame, seq: ev.Seq})
	}
}

// apply feeds ev to a projection; false when it failed (the event then
// goes out without html).
func (h *Hub) apply(p Projector, id string, ev session.Event) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			h.log.Error("projection panicked", "session", id, "seq", ev.Seq, "panic", fmt.Sprint(r))
			ok = false
		}
	}()
	if err := p.Apply(ev); err != nil {
		h.log.Warn("project event", "session", id, "seq", ev.Seq, "err", err)
		return false
	}
	return true
}

// fragment renders the last applied event for one viewer class; "" on
// error.
func (h *Hub) fragment(p Projector, id string, seq int64, c viewerClass) (html string) {
	defer func() {
		if r := recover(); r != nil {
			h.log.Error("projection panicked", "session", id, "seq", seq, "panic", fmt.Sprint(r))
			html = ""
		}
	}()
	html, err := p.Fragment(c.canAnswer, c.viewer)
	if err != nil {
		h.log.Warn("render event", "session", id, "seq", seq, "err", err)
		return ""
	}
	return html
}

// onLive receives every agent's live notifications (under that agent's
// lock): it routes them to the session's topic and notes status flips for
// the sidebars.
func (h *Hub) onLive(ev driver.LiveEvent) {
	switch ev.Kind {
	case driver.LiveUnloaded:
		go h.unloaded(ev.Session)
		return
	case driver.LiveStatus:
		h.changes.add(service.Change{Kind: service.ChangeUpdated, Session: ev.Session})
	case driver.LiveTitle:
		h.changes.add(service.Change{Kind: service.ChangeUpdated, Session: ev.Session})
		return
	}
	h.mu.Lock()
	t := h.topics[ev.Session]
	h.mu.Unlock()
	if t == nil {
		return
	}
	if frame, ok := liveFrame(ev); ok {
		t.offerLive(frame)
	}
}

// unloaded ends the subscriptions of a session whose agent left the
// manager (deleted): they get session/closed and may resubscribe.
func (h *Hub) unloaded(id string) {
	h.mu.Lock()
	t := h.topics[id]
	if t != nil {
		select {
		case <-t.ready:
		default:
			t = nil // still opening: it pins whatever agent is current
		}
	}
	if t != nil && t.err == nil {
		if cur, ok := h.mgr.Lookup(id); ok && Followed(cur) == t.src {
			t = nil // a stale notice about an earlier agent
		}
	}
	if t != nil && h.topics[id] == t {
		delete(h.topics, id)
	}
	h.mu.Unlock()
	if t == nil {
		return
	}
	t.mu.Lock()
	subs := make([]*subscription, 0, len(t.subs))
	for s := range t.subs {
		subs = append(subs, s)
	}
	t.mu.Unlock()
	frame := mustJSON(Push{Ch: ChClosed, Session: id, Reason: "unloaded"})
	for _, s := range subs {
		if s.c.drop(s) {
			s.c.send(frame)
		}
	}
}
