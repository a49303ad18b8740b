package session

import (
	"slices"
	"sync"
	"sync/atomic"
)

// Publishing.
//
// Subscribers see every event from their starting seq on, strictly in seq
// order, each exactly once, and are never called while the log's lock is
// held. Under the lock an append records the event, calls the Sink and queues
// the event; if no goroutine is delivering, the appender becomes the
// deliverer: it takes the queued batch, releases the lock, calls the
// subscribers, re-locks, and repeats until the queue is empty. An appender
// that finds a delivery in progress returns at once; the deliverer hands its
// event on. So callbacks run on an appending goroutine, one at a time.
//
// Consequently an append made from inside a subscriber callback (re-entrant)
// succeeds, unlike upstream, which throws: the nested event is queued and
// delivered to every subscriber after the current one. A panicking subscriber
// is recovered and ignored; the append and the other subscribers are not
// affected. Callbacks must be quick (hand work to a goroutine or a bounded
// queue): the deliverer's Append does not return until the queue is drained.

type subscriber struct {
	fn        func(Event)
	from      int64
	cancelled atomic.Bool
}

// Subscribe registers fn for every event with seq >= next, where next is the
// log length at subscription time. cancel stops delivery; a call already in
// progress may still complete. Events are copies; their Data is read-only.
func (l *Log) Subscribe(fn func(Event)) (next int64, cancel func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	next = int64(len(l.records))
	if fn == nil {
		return next, func() {}
	}
	s := &subscriber{fn: fn, from: next}
	// Clip forces a new backing array, so a deliverer's snapshot never changes.
	l.subs = append(slices.Clip(l.subs), s)
	var once sync.Once
	return next, func() {
		once.Do(func() {
			s.cancelled.Store(true)
			l.mu.Lock()
			defer l.mu.Unlock()
			l.subs = slices.DeleteFunc(slices.Clone(l.subs), func(x *subscriber) bool { return x == s })
		})
	}
}

// HoldDelivery defers delivery: while a hold is in force no appender
// becomes the deliverer, so events are queued; release (idempotent, from
// any goroutine) lifts the hold and delivers what was queued on the
// caller's goroutine, unless a delivery is already in progress, which then
// hands the events on. A caller that appends while holding a lock of its
// own takes a hold before the append and releases it after unlocking, so
// no subscriber ever runs under that lock (a subscriber may call back into
// the caller, e.g. an agent's Followup from an inbox splice observer).
func (l *Log) HoldDelivery() (release func()) {
	l.mu.Lock()
	l.held++
	l.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			l.held--
			l.publishAndUnlock()
		})
	}
}

// publishAndUnlock delivers queued events unless another goroutine already
// does or a HoldDelivery is in force, then releases the write lock the
// caller holds.
func (l *Log) publishAndUnlock() {
	if l.delivering || l.held > 0 || len(l.pending) == 0 {
		l.mu.Unlock()
		return
	}
	l.delivering = true
	for len(l.pending) > 0 {
		batch, subs := l.pending, l.subs
		l.pending = nil
		l.mu.Unlock()
		deliver(batch, subs)
		l.mu.Lock()
		if l.pending == nil {
			clear(batch)
			l.pending = batch[:0] // reuse the buffer
		}
	}
	l.delivering = false
	l.mu.Unlock()
}

func deliver(batch []Event, subs []*subscriber) {
	for _, ev := range batch {
		for _, s := range subs {
			if ev.Seq >= s.from && !s.cancelled.Load() {
				s.call(ev.clone())
			}
		}
	}
}

// call runs one callback; a panic is contained so that one broken viewer
// cannot affect the append or the other subscribers.
func (s *subscriber) call(ev Event) {
	defer func() { _ = recover() }()
	s.fn(ev)
}
