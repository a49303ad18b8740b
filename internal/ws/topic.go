package ws

import (
	"context"
	"sync"
	"time"

	"harness/internal/driver"
	"harness/internal/service"
	"harness/internal/session"
)

// topic is one session followed by this hub: the agent's pin, one log
// subscription and the subscribers it fans out to.
type topic struct {
	h     *Hub
	id    string
	ready chan struct{} // closed once open finished
	err   error         // open's error
	refs  int           // guarded by h.mu

	agent     *driver.Agent
	release   func()
	cancelLog func()

	mu   sync.Mutex
	subs map[*subscription]struct{}
	// delivered is the last seq the log callback fanned out; a subscriber
	// joining now gets every later seq from the callback.
	delivered int64
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
		t = &topic{h: h, id: id, ready: make(chan struct{}), refs: 1, subs: map[*subscription]struct{}{}, delivered: -2}
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

// open pins the agent and subscribes to its log.
func (t *topic) open(ctx context.Context) error {
	ag, release, err := t.h.mgr.Pin(ctx, t.id)
	if err != nil {
		return service.AsError(err)
	}
	t.agent, t.release = ag, release
	next, cancel := ag.Log().Subscribe(t.onEvent)
	t.cancelLog = cancel
	t.mu.Lock()
	// The callback may already have run for seq >= next.
	t.delivered = max(t.delivered, next-1)
	t.mu.Unlock()
	return nil
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
}

// onEvent fans a log event out. It runs on the appending goroutine (maybe
// under the agent's lock), so it only encodes once and queues.
func (t *topic) onEvent(ev session.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.delivered = ev.Seq
	if len(t.subs) == 0 {
		return
	}
	frame, err := eventFrame(t.id, ev)
	if err != nil {
		t.h.log.Error("encode event", "session", t.id, "seq", ev.Seq, "err", err)
		return
	}
	evp := &ev
	for s := range t.subs {
		s.offerLocked(s.eventItem(frame, evp))
	}
}

// offerLive fans a live notification out.
func (t *topic) offerLive(frame []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for s := range t.subs {
		s.offerLocked(item{frame: frame, seq: -1})
	}
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
		if cur, ok := h.mgr.Lookup(id); ok && cur == t.agent {
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
		s.c.drop(s)
		s.c.send(frame)
	}
}
