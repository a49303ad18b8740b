package models

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"harness/internal/session"
)

// Writer errors.
var (
	ErrWriterClosed = errors.New("writer closed")
	// ErrSeqMismatch is wrapped when a session's events do not continue its
	// stored log: they are refused, never written out of order.
	ErrSeqMismatch = errors.New("seq mismatch")
)

// WriterOptions tunes the batched writer. Zero values take the defaults.
type WriterOptions struct {
	// MaxDelay bounds how long an event waits before its batch is written
	// (default 20ms; values above 50ms are capped).
	MaxDelay time.Duration
	// MaxBatch is the most events per transaction (default 2000).
	MaxBatch int
	// OnError is told about refused events and failed writes. It runs on
	// the writer goroutine and must not block.
	OnError func(sessionID string, err error)
	// Retries is how many times a failed transaction is retried before its
	// events are requeued and the error reported (default 3).
	Retries int
	// RetryBackoff is the first retry's wait, doubled per retry (default
	// 10ms). After the retries the batch waits up to 1s before trying again.
	RetryBackoff time.Duration
	// OnBatch is told about every committed transaction: its event count and
	// how long the commit took (metrics). It runs on the writer goroutine and
	// must not block.
	OnBatch func(events int, took time.Duration)
	// OnCommit is told each session's new head after a transaction
	// committed its events (replicas deliver only stored events). It runs
	// on the writer goroutine and must not block.
	OnCommit func(sessionID string, head int64)
}

const (
	defaultMaxDelay = 20 * time.Millisecond
	maxMaxDelay     = 50 * time.Millisecond
	defaultMaxBatch = 2000
	maxCooldown     = time.Second
)

// WriterStats are counters since the writer started.
type WriterStats struct {
	Batches     uint64        `json:"batches"`     // committed transactions
	Events      uint64        `json:"events"`      // committed events
	LastBatch   int           `json:"lastBatch"`   // events in the last committed batch
	Errors      uint64        `json:"errors"`      // failed batches (after retries) and refused session writes
	Retries     uint64        `json:"retries"`     // transaction retries
	Refused     uint64        `json:"refused"`     // events refused (seq mismatch, unknown session, bad event)
	Pending     int           `json:"pending"`     // events waiting now
	MeanLatency time.Duration `json:"meanLatency"` // mean Enqueue-to-commit time of committed events
}

// Writer is the batched writer (group commit): one goroutine gathers the
// events of every session and writes them in one transaction per batch.
//
// Per session it keeps the next expected seq (read from the database the
// first time the session is written); a batch that does not continue the
// stored log is refused with ErrSeqMismatch, and inside the transaction the
// head only moves if it still holds the expected value, so a concurrent
// delete or a second writer is refused too. Refused events are dropped and
// the refusal is sticky until Reset (the in-memory log must be reloaded). A
// failed transaction is retried; if it keeps failing its events stay queued
// and the error is reported until a later attempt succeeds.
//
// Every batch sets sessions.head and sessions.updated_at (the batch's commit
// time) in the same statement, so an active session, even one only streaming
// chunks, sorts first in ListSessions. Queues are unbounded: events are never
// dropped for lack of room, even while the database is failing.
type Writer struct {
	log  *slog.Logger
	db   *DB
	opts WriterOptions

	arena rowArena // the batch's compressed rows (writer goroutine only)

	ctx  context.Context // cancelled when Close gives up
	kill context.CancelFunc
	wake chan struct{} // cap 1: new work or a flush request
	done chan struct{} // closed when the goroutine exits

	mu       sync.Mutex
	sessions map[string]*sessState
	order    []*sessState  // sessions with pending events, oldest first
	npending int           // events queued, not yet taken by a batch
	flushers int           // Flush calls waiting: write without waiting for MaxDelay
	changed  chan struct{} // closed and replaced whenever a batch resolves
	closing  bool
	stats    WriterStats
	latency  time.Duration // summed over committed events
	// failErr is the error of the last batch if it failed; nil once one
	// commits (Store.Writable).
	failErr error

	tx txWriter // used only by the writer goroutine
}

// sessState is one session's queue and bookkeeping; guarded by Writer.mu.
type sessState struct {
	id       string
	pending  []queued
	queued   bool   // listed in Writer.order
	enq      uint64 // events enqueued so far
	resolved uint64 // events committed or refused so far (in order)
	next     int64  // next expected seq, valid when known
	known    bool
	writeErr error  // last failed write; cleared by a successful one
	refused  error  // sticky: the log and the database diverged
	attempts uint64 // write attempts that included this session's events
	// key is the session's LogKey, valid when known.
	key int64
	// tail is the group the session's stored rows end with, which the next
	// batch may extend (nil: start a new row). Only the writer goroutine's
	// resolve sets it.
	tail *group
	// epoch is the lease epoch the session's appends carry (Own); on
	// PostgreSQL a batch only commits while the session's stored
	// lease_epoch equals it. 0 is a session never leased.
	epoch int64
	// disowned: the session's lease was lost in this process (Disown);
	// its appends are dropped until the next Own.
	disowned bool
}

type queued struct {
	ev session.Event
	at time.Time
}

// NewWriter starts the writer goroutine; Close stops it.
func NewWriter(log *slog.Logger, db *DB, opts WriterOptions) *Writer {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.MaxDelay <= 0 {
		opts.MaxDelay = defaultMaxDelay
	}
	if opts.MaxDelay > maxMaxDelay {
		opts.MaxDelay = maxMaxDelay
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = defaultMaxBatch
	}
	if opts.Retries <= 0 {
		opts.Retries = 3
	}
	if opts.RetryBackoff <= 0 {
		opts.RetryBackoff = 10 * time.Millisecond
	}
	ctx, kill := context.WithCancel(context.Background())
	w := &Writer{
		log:      log,
		db:       db,
		opts:     opts,
		ctx:      ctx,
		kill:     kill,
		wake:     make(chan struct{}, 1),
		done:     make(chan struct{}),
		sessions: map[string]*sessState{},
		changed:  make(chan struct{}),
		tx:       newTxWriter(db),
	}
	go w.run()
	return w
}

// Enqueue queues one event of a session. It only appends to a slice and
// signals the writer goroutine, so it can serve as session.Options.Sink.
// Events of one session must be enqueued in seq order.
func (w *Writer) Enqueue(sessionID string, ev session.Event) {
	at := time.Now()
	w.mu.Lock()
	if w.closing {
		w.mu.Unlock()
		w.log.Error("event enqueued after the writer closed", "session", sessionID, "seq", ev.Seq)
		w.report(sessionID, ErrWriterClosed)
		return
	}
	st := w.state(sessionID)
	if st.disowned {
		// The agent that lost the lease is winding down: nothing it
		// appends may be stored, and the database would refuse it.
		w.mu.Unlock()
		return
	}
	st.enq++
	st.pending = append(st.pending, queued{ev: ev, at: at})
	if !st.queued {
		st.queued = true
		w.order = append(w.order, st)
	}
	w.npending++
	signal := w.npending == 1 || w.npending == w.opts.MaxBatch
	w.mu.Unlock()
	if signal {
		w.signal()
	}
}

// Flush returns once every event enqueued for the session before the call is
// committed; or the write's error (after retries) while they are still
// queued; or the refusal error if the session's log no longer continues the
// stored one (sticky until Reset); or ctx.Err().
func (w *Writer) Flush(ctx context.Context, sessionID string) error {
	w.mu.Lock()
	st := w.sessions[sessionID]
	if st == nil {
		w.mu.Unlock()
		return nil
	}
	return w.waitLocked(ctx, st, st.enq)
}

// FlushAll flushes every session with queued events.
func (w *Writer) FlushAll(ctx context.Context) error {
	type target struct {
		st *sessState
		n  uint64
	}
	w.mu.Lock()
	var targets []target
	for _, st := range w.sessions {
		if st.resolved < st.enq {
			targets = append(targets, target{st, st.enq})
		}
	}
	w.mu.Unlock()
	var errs []error
	for _, t := range targets {
		w.mu.Lock()
		if err := w.waitLocked(ctx, t.st, t.n); err != nil {
			errs = append(errs, fmt.Errorf("session %s: %w", t.st.id, err))
			if ctx.Err() != nil {
				break
			}
		}
	}
	return errors.Join(errs...)
}

// waitLocked waits until st has resolved target events. It is called with
// w.mu held and returns with it released.
//
// A flush is an attempt: while a failed write waits out its cooldown, a
// flusher has the writer try again at once and reports that attempt's
// outcome, not the stale error of an earlier one.
func (w *Writer) waitLocked(ctx context.Context, st *sessState, target uint64) error {
	w.flushers++
	defer func() {
		w.flushers--
		w.mu.Unlock()
	}()
	start := st.attempts
	signalled := false
	for {
		switch {
		case st.refused != nil:
			return st.refused
		case st.resolved >= target:
			return nil
		case st.writeErr != nil && st.attempts > start:
			return st.writeErr
		}
		select {
		case <-w.done:
			return fmt.Errorf("flush session %s: %w", st.id, ErrWriterClosed)
		default:
		}
		ch := w.changed
		w.mu.Unlock()
		if !signalled {
			w.signal()
			signalled = true
		}
		select {
		case <-ch:
		case <-w.done:
		case <-ctx.Done():
			w.mu.Lock()
			return ctx.Err()
		}
		w.mu.Lock()
	}
}

// Reset forgets the session's cached next seq and its refusal, after its
// log was reloaded from the database. Queued events stay queued.
func (w *Writer) Reset(sessionID string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if st := w.sessions[sessionID]; st != nil {
		st.known = false
		st.refused = nil
		st.tail = nil
	}
}

// Own starts a new lease term of a session in this process: its appends
// carry epoch from now on. Events still queued from an earlier term are
// dropped (the database would refuse them: their epoch is stale) and
// flushes waiting for them fail with ErrFenced; the next batch reads the
// stored head afresh.
func (w *Writer) Own(sessionID string, epoch int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if st := w.sessions[sessionID]; st != nil {
		w.dropLocked(st, &FencedError{Session: sessionID, Epoch: st.epoch, Stored: epoch})
	}
	w.state(sessionID).epoch = epoch
}

// Disown ends the session's lease term epoch in this process (the lease
// was lost): queued events are dropped, later appends are dropped at
// Enqueue, and flushes fail with ErrFenced until the next Own. A term
// other than the current one is left alone.
func (w *Writer) Disown(sessionID string, epoch int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.sessions[sessionID]
	if st == nil || st.epoch != epoch {
		return
	}
	fe := &FencedError{Session: sessionID, Epoch: epoch, Stored: -1}
	w.dropLocked(st, fe)
	ns := w.state(sessionID)
	ns.epoch, ns.disowned, ns.refused = epoch, true, fe
}

// Forget drops a deleted session's queued events and state. Waiting
// flushes return ErrNotFound.
func (w *Writer) Forget(sessionID string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.sessions[sessionID]
	if st == nil {
		return
	}
	w.dropLocked(st, fmt.Errorf("session %s: %w", sessionID, ErrNotFound))
}

// dropLocked discards st's queued events and state; flushes waiting on it
// return refusal.
func (w *Writer) dropLocked(st *sessState, refusal error) {
	w.npending -= len(st.pending)
	st.pending = nil
	if st.queued {
		st.queued = false
		for i, o := range w.order {
			if o == st {
				w.order = append(w.order[:i:i], w.order[i+1:]...)
				break
			}
		}
	}
	st.resolved = st.enq
	st.refused = refusal
	delete(w.sessions, st.id)
	w.broadcastLocked()
}

// Close writes everything queued and stops the goroutine. If ctx ends first
// the remaining events are abandoned and reported in the error, and Close
// returns without waiting for a commit under way: on a dead disk it may
// never return.
func (w *Writer) Close(ctx context.Context) error {
	w.mu.Lock()
	w.closing = true
	w.mu.Unlock()
	w.signal()
	select {
	case <-w.done:
	case <-ctx.Done():
	}
	w.kill()
	w.mu.Lock()
	// Queued or in a batch under way: not known to be stored.
	var left uint64
	for _, st := range w.sessions {
		left += st.enq - st.resolved
	}
	w.mu.Unlock()
	if left > 0 {
		err := ctx.Err()
		if err == nil {
			err = ErrWriterClosed
		}
		return fmt.Errorf("close writer: %d events not written: %w", left, err)
	}
	return nil
}

// Stats returns a snapshot of the counters.
func (w *Writer) Stats() WriterStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.stats
	s.Pending = w.npending
	if s.Events > 0 {
		s.MeanLatency = w.latency / time.Duration(s.Events)
	}
	return s
}

func (w *Writer) state(id string) *sessState {
	st := w.sessions[id]
	if st == nil {
		st = &sessState{id: id}
		w.sessions[id] = st
	}
	return st
}

func (w *Writer) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *Writer) broadcastLocked() {
	close(w.changed)
	w.changed = make(chan struct{})
}

func (w *Writer) report(sessionID string, err error) {
	if w.opts.OnError != nil {
		w.opts.OnError(sessionID, err)
	}
}
