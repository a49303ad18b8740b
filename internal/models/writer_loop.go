package models

import (
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// part is one session's share of a batch: a prefix of its queue.
type part struct {
	st    *sessState
	evs   []queued
	known bool  // st.known when taken
	next  int64 // st.next when taken
	key   int64 // st.key when taken: the session's LogKey, valid when known
	epoch int64 // st.epoch when taken: the lease epoch the part carries
	// prevTail is st.tail when taken: the stored group the part may extend.
	prevTail *group
	rows     []eventRow
	// update rewrites the session's stored group when the part extends it;
	// tail is the group the session's rows end with once the part commits.
	update *eventRow
	tail   *group
	err    error // refusal
}

// run is the writer goroutine.
func (w *Writer) run() {
	defer close(w.done)
	var cooldown time.Duration
	var notBefore time.Time
	for {
		parts, wait, exit := w.take(notBefore)
		if exit {
			return
		}
		if parts == nil {
			if !w.sleep(wait) {
				return
			}
			continue
		}
		if w.write(parts) {
			cooldown, notBefore = 0, time.Time{}
			continue
		}
		// The batch failed even after its retries: back off before the
		// requeued events are tried again, up to maxCooldown.
		cooldown = min(max(2*cooldown, 50*time.Millisecond), maxCooldown)
		notBefore = time.Now().Add(cooldown)
	}
}

// sleep waits for a signal or, when wait > 0, for wait to pass. It reports
// false when the writer was killed.
func (w *Writer) sleep(wait time.Duration) bool {
	var timeout <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-w.wake:
	case <-timeout:
	case <-w.ctx.Done():
		return false
	}
	return true
}

// take returns the next batch when it is due, else how long to wait (0:
// until signalled). exit is set when the writer is closing and idle, or was
// killed.
func (w *Writer) take(notBefore time.Time) (parts []*part, wait time.Duration, exit bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ctx.Err() != nil {
		return nil, 0, true
	}
	if w.npending == 0 {
		return nil, 0, w.closing
	}
	now := time.Now()
	due := now
	if !w.closing && w.flushers == 0 && w.npending < w.opts.MaxBatch {
		oldest := now
		for _, st := range w.order {
			if len(st.pending) > 0 && st.pending[0].at.Before(oldest) {
				oldest = st.pending[0].at
			}
		}
		due = oldest.Add(w.opts.MaxDelay)
	}
	if notBefore.After(due) && w.flushers == 0 {
		due = notBefore // a waiting flusher skips the cooldown
	}
	if d := due.Sub(now); d > 0 {
		return nil, d, false
	}
	n := 0
	for len(w.order) > 0 && n < w.opts.MaxBatch {
		st := w.order[0]
		k := min(len(st.pending), w.opts.MaxBatch-n)
		p := &part{st: st, evs: st.pending[:k:k], known: st.known, next: st.next, key: st.key, epoch: st.epoch, prevTail: st.tail}
		parts = append(parts, p)
		n += k
		if k == len(st.pending) {
			st.pending = nil
			st.queued = false
			w.order[0] = nil
			w.order = w.order[1:]
		} else {
			st.pending = st.pending[k:]
		}
	}
	w.npending -= n
	return parts, 0, false
}

// write validates, encodes and commits one batch, then resolves it. It
// reports whether the transaction succeeded (refusals count as success: they
// are final).
func (w *Writer) write(parts []*part) bool {
	w.arena.reset() // the last batch's rows are committed or dropped
	var unknown []string
	for _, p := range parts {
		if !p.known {
			unknown = append(unknown, p.st.id)
		}
	}
	heads, err := w.tx.heads(w.ctx, unknown)
	if err != nil {
		w.resolve(parts, fmt.Errorf("read session heads: %w", err))
		return false
	}
	var ok []*part
	for _, p := range parts {
		if !p.known {
			h, found := heads[p.st.id]
			if !found {
				p.err = fmt.Errorf("session %s: %w", p.st.id, ErrNotFound)
				continue
			}
			p.next, p.key = h.head+1, h.key
			p.known = true
		}
		if p.err = p.check(); p.err != nil {
			continue
		}
		if p.update, p.rows, p.tail, p.err = encodeRows(p.st.id, p.evs, w.tx.extendable(p.prevTail), &w.arena); p.err != nil {
			continue
		}
		ok = append(ok, p)
	}

	at := now()
	began := time.Now()
	var stale []bool
	for attempt := 0; len(ok) > 0; attempt++ {
		stale, err = w.tx.commit(w.ctx, ok, at)
		if err == nil || attempt == w.opts.Retries || w.ctx.Err() != nil {
			break
		}
		w.log.Warn("event batch failed, retrying", "err", err, "attempt", attempt+1)
		w.mu.Lock()
		w.stats.Retries++
		w.mu.Unlock()
		select {
		case <-time.After(w.opts.RetryBackoff << attempt):
		case <-w.ctx.Done():
		}
		at = now()
	}
	if err != nil {
		w.log.Error("event batch failed", "err", err, "events", countEvents(ok))
		w.resolve(parts, err)
		return false
	}
	for i, p := range ok {
		if stale[i] {
			p.err = w.explainStale(p)
		}
	}
	if w.opts.OnBatch != nil && len(ok) > 0 {
		w.opts.OnBatch(countEvents(ok), time.Since(began))
	}
	if w.opts.OnCommit != nil {
		for i, p := range ok {
			if !stale[i] {
				w.opts.OnCommit(p.st.id, p.evs[len(p.evs)-1].ev.Seq)
			}
		}
	}
	w.resolve(parts, nil)
	return true
}

// check verifies that the part continues the stored log contiguously.
func (p *part) check() error {
	want := p.next
	for _, q := range p.evs {
		if q.ev.Seq != want {
			return fmt.Errorf("session %s: event seq %d, want %d: %w", p.st.id, q.ev.Seq, want, ErrSeqMismatch)
		}
		want++
	}
	return nil
}

// explainStale builds the error of a part whose head guard failed inside the
// transaction: the session was deleted, or its log moved under us.
func (w *Writer) explainStale(p *part) error {
	if w.tx.pg {
		// On PostgreSQL the guard also holds the lease epoch.
		var head, epoch int64
		err := w.tx.r.QueryRowContext(w.ctx, `SELECT head, lease_epoch FROM sessions WHERE id = $1`, p.st.id).Scan(&head, &epoch)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("session %s: %w", p.st.id, ErrNotFound)
		case err == nil && epoch != p.epoch:
			return &FencedError{Session: p.st.id, Epoch: p.epoch, Stored: epoch}
		case err == nil:
			return fmt.Errorf("session %s: stored head %d, batch starts at seq %d: %w",
				p.st.id, head, p.evs[0].ev.Seq, ErrSeqMismatch)
		}
	}
	heads, err := w.tx.heads(w.ctx, []string{p.st.id})
	switch h, found := heads[p.st.id]; {
	case err != nil:
		return fmt.Errorf("session %s: stored head changed: %w", p.st.id, ErrSeqMismatch)
	case !found:
		return fmt.Errorf("session %s: %w", p.st.id, ErrNotFound)
	default:
		return fmt.Errorf("session %s: stored head %d, batch starts at seq %d: %w",
			p.st.id, h.head, p.evs[0].ev.Seq, ErrSeqMismatch)
	}
}

// resolve records a batch's outcome. Parts with err are refused (final).
// With failErr set the other parts go back to the front of their queues;
// otherwise they are committed.
func (w *Writer) resolve(parts []*part, failErr error) {
	type report struct {
		id  string
		err error
	}
	var reports []report
	commitAt := time.Now()

	w.mu.Lock()
	var requeue []*sessState
	committed := 0
	for _, p := range parts {
		st := p.st
		st.attempts++
		if p.known {
			st.known, st.next, st.key = true, p.next, p.key
		}
		switch {
		case p.err != nil:
			st.resolved += uint64(len(p.evs))
			st.refused = p.err
			st.known = false
			st.tail = nil
			w.stats.Refused += uint64(len(p.evs))
			w.stats.Errors++
			reports = append(reports, report{st.id, p.err})
		case failErr != nil:
			if w.sessions[st.id] != st {
				continue // forgotten (deleted) meanwhile
			}
			st.pending = append(p.evs[:len(p.evs):len(p.evs)], st.pending...)
			w.npending += len(p.evs)
			if !st.queued {
				st.queued = true
				requeue = append(requeue, st)
			}
			st.writeErr = fmt.Errorf("write events: %w", failErr)
			reports = append(reports, report{st.id, st.writeErr})
		default:
			n := len(p.evs)
			st.resolved += uint64(n)
			st.next = p.evs[n-1].ev.Seq + 1
			st.known = true
			st.tail = p.tail
			st.writeErr = nil
			committed += n
			for _, q := range p.evs {
				w.latency += commitAt.Sub(q.at)
			}
		}
	}
	if len(requeue) > 0 {
		w.order = append(requeue, w.order...)
	}
	w.failErr = failErr
	if failErr != nil {
		w.stats.Errors++
	} else if committed > 0 {
		w.stats.Batches++
		w.stats.Events += uint64(committed)
		w.stats.LastBatch = committed
	}
	w.mu.Unlock()

	// Report before waking the flushers, so an error is reported by the
	// time Flush returns it.
	for _, r := range reports {
		w.log.Warn("events not written", "session", r.id, "err", r.err)
		w.report(r.id, r.err)
	}
	w.mu.Lock()
	w.broadcastLocked()
	w.mu.Unlock()
}

func countEvents(parts []*part) int {
	n := 0
	for _, p := range parts {
		n += len(p.evs)
	}
	return n
}
