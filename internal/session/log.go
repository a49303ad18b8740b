package session

import (
	"sync"
	"time"

	"harness/internal/llm"
)

// Options are a Log's dependencies.
type Options struct {
	// Clock returns epoch milliseconds; nil means time.Now().UnixMilli().
	Clock func() int64
	// Sink is the persistence hook: called for every appended event, in seq
	// order, while the log's lock is held. It must not block, panic or call
	// back into the Log. nil means none.
	Sink func(Event)
	// Trusted tells Load the events come from this server's own store,
	// which holds only events a log validated when they were appended, with
	// their Data compact JSON that the log may keep: their JSON is not
	// validated again and only the payloads the log folds are decoded (once).
	// The relational checks (seqs, surface, invariants the log enforces)
	// still run. A cold load of a long session is then one decode, not
	// three.
	Trusted bool
}

// record is one committed event plus its cached model projection.
type record struct {
	ev  Event
	msg *llm.Message // projection of a surface node; nil when it projects to nothing
}

// Log is one session's append-only event log with its surface, derived
// history and folded state. It is safe for concurrent use.
//
// Events handed out (by Append, Event, Events, subscribers, Sink) are copies,
// except their Data bytes, which are shared with the log and must be treated
// as read-only.
type Log struct {
	header Header
	clock  func() int64
	sink   func(Event)

	mu      sync.RWMutex
	records []record
	surface surface
	derived []llm.Message
	// derivedGen counts rebuilds of derived (replacements).
	derivedGen uint64
	// wire caches provider encodings of the derived messages.
	wire wireStore
	fold fold

	// Publishing state, see publish.go.
	subs       []*subscriber // copy-on-write
	pending    []Event
	delivering bool
	held       int // HoldDelivery holds in force
}

// New returns a fresh, empty live log.
func New(h Header, opts Options) *Log {
	clock := opts.Clock
	if clock == nil {
		clock = func() int64 { return time.Now().UnixMilli() }
	}
	return &Log{header: h, clock: clock, sink: opts.Sink, fold: newFold()}
}

// Load rebuilds a stored log (cold load) with full seed validation: contiguous
// seqs from 0, envelopes, JSON, vocabulary, message shapes, request headers
// and surface transitions. It adds no end-seed marker, applies no crash repair
// and does not call the Sink for the loaded events.
func Load(h Header, events []Event, opts Options) (*Log, error) {
	l := New(h, Options{Clock: opts.Clock})
	l.records = make([]record, 0, len(events))
	for i, ev := range events {
		if ev.Seq != int64(i) {
			return nil, errorf(CodeNotContiguous, "not contiguous: expected seq %d, got seq %d", i, ev.Seq)
		}
		if !opts.Trusted {
			data, err := ownJSON(ev.Data)
			if err != nil {
				return nil, atEvent(ev, err)
			}
			ev.Data = data
		}
		a, err := l.admit(ev.clone(), opts.Trusted)
		if err != nil {
			return nil, err
		}
		l.apply(a)
	}
	l.sink = opts.Sink
	return l, nil
}

// NewSeeded starts a log from a seed (fork, import): the seed is validated
// like Load, every seed event is passed to the Sink (the child must store
// them), and session/end-seed is appended unless the seed already ends with
// one; an empty seed gets the marker at seq 0. A zero h.SeedLength is set to
// the seed's length (not counting a trailing marker), so the inbox projection
// ignores the parent's queue.
func NewSeeded(h Header, seed []Event, opts Options) (*Log, error) {
	l, err := Load(h, seed, opts)
	if err != nil {
		return nil, err
	}
	n := len(seed)
	endsWithMarker := n > 0 && seed[n-1].Type == TypeEndSeed
	if l.header.SeedLength == 0 {
		l.header.SeedLength = int64(n)
		if endsWithMarker {
			l.header.SeedLength--
		}
	}
	if l.sink != nil {
		for _, r := range l.records {
			l.sink(r.ev.clone())
		}
	}
	if !endsWithMarker {
		if _, err := l.Append(TypeEndSeed, EndSeed{}); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// Header returns the session metadata the log was created with.
func (l *Log) Header() Header { return l.header }

// Len returns the number of events, which is also the next seq.
func (l *Log) Len() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return int64(len(l.records))
}

// Event returns the event with the given seq.
func (l *Log) Event(seq int64) (Event, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if seq < 0 || seq >= int64(len(l.records)) {
		return Event{}, false
	}
	return l.records[seq].ev.clone(), true
}

// Events returns the events with from <= seq < to, clamped to the log, in a
// new slice.
func (l *Log) Events(from, to int64) []Event {
	l.mu.RLock()
	defer l.mu.RUnlock()
	from = max(from, 0)
	to = min(to, int64(len(l.records)))
	if from >= to {
		return []Event{}
	}
	out := make([]Event, 0, to-from)
	for _, r := range l.records[from:to] {
		out = append(out, r.ev.clone())
	}
	return out
}

// Surface returns the current surface: the seqs of the nodes that form the
// model-visible history, in order.
func (l *Log) Surface() []int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return append([]int64{}, l.surface.nodes...)
}

// ReplaceGeneration counts committed surface replacements.
func (l *Log) ReplaceGeneration() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.surface.gen
}

// clone copies the parts of an event a caller could mutate in place; Data is
// shared read-only.
func (ev Event) clone() Event {
	if ev.SurfaceOp != nil {
		op := *ev.SurfaceOp
		ev.SurfaceOp = &op
	}
	if ev.SourceEventSeqs != nil {
		ev.SourceEventSeqs = append(make([]int64, 0, len(ev.SourceEventSeqs)), ev.SourceEventSeqs...)
	}
	return ev
}
