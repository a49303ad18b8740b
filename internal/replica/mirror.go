package replica

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"harness/internal/driver"
	"harness/internal/models"
	"harness/internal/session"
)

// Mirror is this replica's read-only copy of a session another replica
// owns: its log, fed from the events table as the owner's commits are
// announced, and its live state, kept from the owner's live notifications
// (and fetched from the owner when a mirror opens or a notification was
// too large to send). The hub follows it as it follows a local agent.
type Mirror struct {
	r   *Replica
	id  string
	log *session.Log

	ctx    context.Context
	cancel context.CancelFunc
	wake   chan struct{} // a head was announced: read the new events
	state  chan struct{} // ask the owner for the live state
	done   chan struct{}

	mu       sync.Mutex
	refs     int
	status   driver.Status
	queue    driver.Queue
	pending  []driver.Interaction
	allowed  []string
	liveSeen uint64 // live notifications applied, to order a fetched state after them
}

// mirrorPage is how many events one catch-up read takes.
const mirrorPage = 512

// Follow returns the mirror of session id, opening it for its first
// follower; release ends the follow. A session this replica cannot read
// fails.
func (r *Replica) Follow(ctx context.Context, id string) (*Mirror, func(), error) {
	r.mu.Lock()
	m := r.mirrors[id]
	if m != nil {
		m.refs++
		r.mu.Unlock()
		return m, r.releaser(m), nil
	}
	r.mu.Unlock()

	l, err := r.d.Store.ReadLog(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	mctx, cancel := context.WithCancel(r.base)
	st := l.State()
	m = &Mirror{
		r: r, id: id, log: l, ctx: mctx, cancel: cancel,
		wake: make(chan struct{}, 1), state: make(chan struct{}, 1), done: make(chan struct{}),
		refs: 1, status: driver.StatusIdle, allowed: st.AllowedTools,
	}
	if st.TurnOpen {
		m.status = driver.StatusRunning
	}
	r.mu.Lock()
	if cur := r.mirrors[id]; cur != nil {
		// Another follower opened it meanwhile.
		cur.refs++
		r.mu.Unlock()
		cancel()
		return cur, r.releaser(cur), nil
	}
	r.mirrors[id] = m
	r.mu.Unlock()
	// The owner's live state, before the first follower reads it; a
	// failure leaves the state the log implies (the owner's next
	// notifications correct it).
	m.fetchState(ctx)
	m.kick() // events committed between the read and the registration
	go m.run()
	return m, r.releaser(m), nil
}

func (r *Replica) releaser(m *Mirror) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			m.refs--
			last := m.refs == 0
			if last && r.mirrors[m.id] == m {
				delete(r.mirrors, m.id)
			}
			r.mu.Unlock()
			if last {
				m.cancel()
				<-m.done
			}
		})
	}
}

// Log is the mirrored log.
func (m *Mirror) Log() *session.Log { return m.log }

// Status is the owner's agent status as last notified.
func (m *Mirror) Status() driver.Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.status
}

// Queue is the owner's pending inbox as last notified.
func (m *Mirror) Queue() driver.Queue {
	m.mu.Lock()
	defer m.mu.Unlock()
	return driver.Queue{Queued: slices.Clone(m.queue.Queued), Steering: slices.Clone(m.queue.Steering)}
}

// PendingInteractions are the owner's open approvals and questions.
func (m *Mirror) PendingInteractions() []driver.Interaction {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.pending)
}

// AllowedTools are the tools allowed for the rest of the session.
func (m *Mirror) AllowedTools() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.allowed)
}

// apply keeps the mirror's live state from one live notification.
func (m *Mirror) apply(ev driver.LiveEvent) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.liveSeen++
	switch ev.Kind {
	case driver.LiveStatus:
		m.status = ev.Status
	case driver.LiveQueue:
		if ev.Queue != nil {
			m.queue = *ev.Queue
		}
	case driver.LiveInteractionRequested:
		if in := ev.Interaction; in != nil && !slices.ContainsFunc(m.pending, func(p driver.Interaction) bool { return p.ID == in.ID }) {
			m.pending = append(m.pending, *in)
		}
	case driver.LiveInteractionResolved:
		if in := ev.Interaction; in != nil {
			m.pending = slices.DeleteFunc(m.pending, func(p driver.Interaction) bool { return p.ID == in.ID })
		}
	case driver.LiveAllowed:
		m.allowed = slices.Clone(ev.Tools)
	}
}

// announce notes a committed head of the session; a deleted session's
// subscriptions end as they do on the replica that deleted it.
func (m *Mirror) announce(head int64) {
	if head == models.DeletedHead {
		m.r.d.Manager.PublishRemote(driver.LiveEvent{Kind: driver.LiveUnloaded, Session: m.id, Origin: "database"})
		return
	}
	if head >= m.log.Len() {
		m.kick()
	}
}

func (m *Mirror) kick() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

func (m *Mirror) kickState() {
	select {
	case m.state <- struct{}{}:
	default:
	}
}

// run reads the announced events until the mirror closes. A failed read
// is retried after a short pause.
func (m *Mirror) run() {
	defer close(m.done)
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-m.wake:
		case <-retry.C:
		case <-m.state:
			m.fetchState(m.ctx)
			continue
		}
		if err := m.catchUp(); err != nil {
			if m.ctx.Err() != nil {
				return
			}
			m.r.log.Warn("mirror of a session owned by another replica: read new events", "session", m.id, "err", err)
			retry.Reset(200 * time.Millisecond)
		}
	}
}

// catchUp ingests every stored event after the mirror's head.
func (m *Mirror) catchUp() error {
	for {
		evs, err := m.r.d.Store.EventsSince(m.ctx, m.id, m.log.Len()-1, mirrorPage)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			if err := m.log.Ingest(ev); err != nil {
				return fmt.Errorf("ingest seq %d: %w", ev.Seq, err)
			}
		}
		if len(evs) < mirrorPage {
			return nil
		}
	}
}

// fetchState asks the owner for the session's live state. No owner (the
// lease is free) means no agent runs: idle, no queue, nothing pending.
func (m *Mirror) fetchState(ctx context.Context) {
	m.mu.Lock()
	seen := m.liveSeen
	m.mu.Unlock()
	st, err := m.r.fetchState(ctx, m.id)
	if errors.Is(err, errNoOwner) {
		st = &liveState{Status: driver.StatusIdle, Allowed: m.log.State().AllowedTools}
		if m.log.State().TurnOpen {
			st.Status = driver.StatusRunning // repaired by the next owner
		}
	} else if err != nil {
		m.r.log.Warn("mirror: ask the owner for the live state", "session", m.id, "err", err)
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.liveSeen != seen {
		return // newer notifications arrived meanwhile
	}
	m.status, m.queue, m.pending, m.allowed = st.Status, st.Queue, st.Pending, st.Allowed
}
