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
	// pass is the subscribers the projector's pass in progress has items
	// for (their subscription.pass), passMost the most items one has, and
	// out the deliveries made of them (projector only, under mu).
	pass     []*subscription
	passMost int
	out      []delivery
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
}

// liveRun is the events of one fan-out, prepared for the batch
// subscribers of one viewer class. One fan-out is usually one event; it
// is several when the projector fell behind (the machine is busy), and
// then each subscriber gets them in one frame, deltas merged, instead of
// one frame per event: the cost of a fan-out is mostly one write system
// call per subscriber, so falling behind makes the next fan-outs cheaper
// rather than the lag longer.
type liveRun struct {
	evs  []*liveEvent
	size int64 // what the run counts against a send queue's bound

	// frame is the run's session/events frame, built once by the first
	// writer that sends the run by itself (the usual case of a subscriber
	// that keeps up) and shared by the others.
	once  sync.Once
	frame []byte
}

func newLiveRun(evs []*liveEvent) *liveRun {
	r := &liveRun{evs: evs}
	for _, e := range evs {
		r.size += int64(len(e.raw) + len(e.html) + 16)
	}
	return r
}

// frameOf returns the session/events frame of the run by itself.
func (r *liveRun) frameOf(sessionID string) []byte {
	r.once.Do(func() { r.frame = batchFrame(sessionID, r.evs, true) })
	return r.frame
}

// from returns the run's events from seq on (nil when none is).
func (r *liveRun) from(seq int64) *liveRun {
	for i, e := range r.evs {
		if e.seq >= seq {
			if i == 0 {
				return r
			}
			return newLiveRun(r.evs[i:])
		}
	}
	return nil
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

// fanStoredLocked fans out the log's events up to the stored head (t.mu
// held).
func (t *topic) fanStoredLocked(head int64) {
	if from := t.delivered + 1; t.gated && head >= from {
		t.fanLogLocked(t.src.Log().Events(from, head+1))
	}
}

// fanLogLocked fans out events in runs of at most fanRunMax (t.mu held).
func (t *topic) fanLogLocked(evs []session.Event) {
	for len(evs) > 0 {
		n := min(len(evs), fanRunMax)
		t.fanEventsLocked(evs[:n])
		t.deliverFullLocked()
		evs = evs[n:]
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
// queued and fans it out in order. Everything one take holds is one
// pass: each subscriber's frames of the pass go out together, with one
// write system call while its socket keeps up. A new turn brings half a
// dozen live frames (status, inbox) and events at once; one fan-out each
// was that many writes per viewer, and the chunks behind them waited.
func (t *topic) project() {
	var batch []pendingEntry
	var evs []session.Event
	for {
		var ok bool
		if batch, ok = t.pending.take(batch, nil); !ok {
			return
		}
		t.mu.Lock()
		for i := 0; i < len(batch); {
			switch e := batch[i]; {
			case e.live != nil:
				t.fanLiveLocked(e.live)
				i++
			case e.stored != nil:
				t.fanStoredLocked(*e.stored)
				i++
			default: // the events queued behind each other
				j := i
				for j < len(batch) && batch[j].live == nil && batch[j].stored == nil {
					evs = append(evs, batch[j].ev)
					j++
				}
				t.fanLogLocked(evs)
				clear(evs)
				evs, i = evs[:0], j
			}
			t.deliverFullLocked()
		}
		t.deliverLocked()
		t.mu.Unlock()
		clear(batch)
	}
}

// fanRunMax bounds the events of one fan-out.
const fanRunMax = 256

// fanLiveLocked offers a live frame to every subscriber (t.mu held).
func (t *topic) fanLiveLocked(frame []byte) {
	for s := range t.subs {
		s.offerLocked(item{frame: frame, seq: -1})
	}
}

// passItems is how many items a subscriber may gather in one pass before
// the pass delivers what it has.
const passItems = maxDirect

// deliverFullLocked delivers the pass so far once a subscriber has
// passItems items (t.mu held).
func (t *topic) deliverFullLocked() {
	if t.passMost >= passItems {
		t.deliverLocked()
	}
}

// deliverLocked offers what the pass collected to the connections (t.mu
// held), and forgets it.
func (t *topic) deliverLocked() {
	for _, s := range t.pass {
		t.out = append(t.out, delivery{c: s.c, items: s.pass})
	}
	t.h.deliver(t.out)
	for _, s := range t.pass {
		clear(s.pass)
		s.pass = s.pass[:0]
		if cap(s.pass) > 2*passItems { // a burst's; not for the subscription's life
			s.pass = nil
		}
	}
	clear(t.pass)
	clear(t.out)
	t.pass, t.out, t.passMost = t.pass[:0], t.out[:0], 0
}

// classOut is one fan-out prepared for one viewer class.
type classOut struct {
	html     []string // per event: the class's fragment ("" without)
	frames   [][]byte // per event: session/event frames (plain subscribers), built on demand
	run      *liveRun // batch subscribers, built on demand (runBuilt)
	runBuilt bool
}

// fanEventsLocked applies the events to the projection, encodes each
// once, renders each once per viewer class present and offers ready bytes
// to each subscriber: one item of all of them to a batch subscriber, one
// frame per event to the others. It runs under t.mu, so a subscriber
// joins either before the events (and gets them from here) or after (and
// replays them from the log).
func (t *topic) fanEventsLocked(evs []session.Event) {
	for _, ev := range evs {
		t.delivered = max(t.delivered, ev.Seq)
	}
	if t.proj == nil && t.html > 0 && t.h.projections != nil {
		// Everything before evs is in the log: the log appends before it
		// calls back.
		t.proj = t.h.projections(t.id, t.src.Log(), evs[0].Seq)
	}
	// Which kinds of subscriber are there: html is only rendered for a
	// class that has one, deltas only decoded for batch subscribers.
	var classes map[viewerClass]*classOut
	anyBatch := false
	for s := range t.subs {
		anyBatch = anyBatch || s.batch
		if s.render && t.proj != nil {
			if classes == nil {
				classes = make(map[viewerClass]*classOut, 2)
			}
			if classes[s.class] == nil {
				classes[s.class] = &classOut{html: make([]string, len(evs))}
			}
		}
	}
	raws := make([][]byte, len(evs))
	var deltas []*delta
	if anyBatch {
		deltas = make([]*delta, len(evs))
	}
	if len(t.subs) == 0 { // the projection still follows the log
		for _, ev := range evs {
			if t.proj != nil {
				t.h.apply(t.proj, t.id, ev)
			}
		}
		return
	}
	for k, ev := range evs {
		applied := t.proj != nil && t.h.apply(t.proj, t.id, ev)
		raw, err := session.AppendEvent(nil, ev)
		if err != nil {
			t.h.log.Error("encode event", "session", t.id, "seq", ev.Seq, "err", err)
			continue
		}
		raws[k] = raw
		if anyBatch {
			deltas[k] = deltaOf(ev)
		}
		if !applied {
			continue
		}
		for c, out := range classes {
			out.html[k] = t.h.fragment(t.proj, t.id, ev.Seq, c)
		}
	}
	plain := &classOut{html: make([]string, len(evs))} // no html
	for s := range t.subs {
		out := plain
		if s.render && classes[s.class] != nil {
			out = classes[s.class]
		}
		if s.batch {
			if run := out.runOf(evs, raws, deltas); run != nil {
				s.offerLocked(item{run: run, sub: s, seq: run.evs[len(run.evs)-1].seq, first: run.evs[0].seq})
			}
			continue
		}
		for k, ev := range evs {
			if f := out.frameOf(t.id, k, raws); f != nil {
				s.offerLocked(item{frame: f, seq: ev.Seq})
			}
		}
	}
}

// runOf is the class's run of the fan-out's events (nil if none could be
// encoded), built once.
func (o *classOut) runOf(evs []session.Event, raws [][]byte, deltas []*delta) *liveRun {
	if !o.runBuilt {
		o.runBuilt = true
		run := make([]*liveEvent, 0, len(evs))
		for k, ev := range evs {
			if raws[k] != nil {
				run = append(run, &liveEvent{seq: ev.Seq, raw: raws[k], html: o.html[k], delta: deltas[k]})
			}
		}
		if len(run) > 0 {
			o.run = newLiveRun(run)
		}
	}
	return o.run
}

// frameOf is the class's session/event frame of event k (nil if it could
// not be encoded), built once.
func (o *classOut) frameOf(sessionID string, k int, raws [][]byte) []byte {
	if raws[k] == nil {
		return nil
	}
	if o.frames == nil {
		o.frames = make([][]byte, len(raws))
	}
	if o.frames[k] == nil {
		o.frames[k] = eventFrameRaw(sessionID, raws[k])
		if o.html[k] != "" {
			o.frames[k] = withHTML(o.frames[k], o.html[k])
		}
	}
	return o.frames[k]
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
