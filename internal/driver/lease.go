package driver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"harness/internal/session"
)

// Leases decide which replica runs a session's agent (PostgreSQL with
// several replicas; docs/deploy.md). The Manager takes a session's lease
// before it creates, loads or resumes the agent, renews every lease it
// holds in one background loop, releases a lease when the agent unloads
// (at shutdown it hands a session whose queue waits over to the others),
// and stops an agent at once when its lease is lost. The epoch is the
// lease's fencing token: the implementation makes the session's appends
// carry it, and the database refuses appends of a stale one. A nil Leases
// (SQLite: one process) owns every session at no cost.
type Leases interface {
	// Acquire takes the session's lease and returns its new epoch; a lease
	// held by another live replica fails with a *NotOwnerError.
	Acquire(ctx context.Context, sessionID string) (epoch int64, err error)
	// Renew extends the held leases (session → epoch) and reports which
	// were kept; one missing from kept was lost.
	Renew(ctx context.Context, held map[string]int64) (kept map[string]bool, err error)
	// Release gives up a lease whose agent unloaded (its appends are
	// durable).
	Release(ctx context.Context, sessionID string, epoch int64) error
	// Handover is Release at shutdown of a session whose queue waits: the
	// other replicas are told to take it at once.
	Handover(ctx context.Context, sessionID string, epoch int64) error
	// Lost says the manager stopped the session's agent because the lease
	// of epoch is gone (why: metrics): nothing it still appends may be
	// stored. It must not block.
	Lost(sessionID string, epoch int64, why LeaseLoss)
}

// LeaseLoss says why a running agent's lease was lost.
type LeaseLoss string

// Lease losses.
const (
	// LeaseTaken: a renewal found another replica holding the lease.
	LeaseTaken LeaseLoss = "taken"
	// LeaseUnrenewed: the lease could not be renewed before it expired.
	LeaseUnrenewed LeaseLoss = "unrenewed"
	// LeaseFenced: the database refused an append under the lease's epoch.
	LeaseFenced LeaseLoss = "fenced"
)

// DefaultLeaseTTL is how long a lease lasts without renewal; the manager
// renews at a third of it.
const DefaultLeaseTTL = 8 * time.Second

// ErrNotOwner is wrapped when a session's lease is held by another live
// replica: its agent runs there, not here.
var ErrNotOwner = errors.New("session is owned by another replica")

// NotOwnerError names the replica that owns a session (for forwarding a
// command to it).
type NotOwnerError struct {
	Session string
	Owner   string // replica id
	Addr    string // its advertised address ("" when unknown)
}

func (e *NotOwnerError) Error() string {
	return fmt.Sprintf("session %s: %v (%s at %s)", e.Session, ErrNotOwner, e.Owner, e.Addr)
}

func (e *NotOwnerError) Unwrap() error { return ErrNotOwner }

// acquire takes id's lease for a new agent: its epoch and the local time by
// which it must be renewed (the stale bound: past it, another replica may
// take the session). Without Leases it is free. An agent of id that
// lost its lease and is still winding down is waited for first, so its
// last appends cannot fall into the new term.
func (m *Manager) acquire(ctx context.Context, id string) (epoch int64, until time.Time, err error) {
	if m.opts.Leases == nil {
		return 0, time.Time{}, nil
	}
	if err := m.awaitStopped(ctx, id); err != nil {
		return 0, time.Time{}, fmt.Errorf("session %s: %w", id, err)
	}
	// The deadline counts from before the statement: the database's
	// expiry is later, never earlier.
	sent := time.Now()
	epoch, err = m.opts.Leases.Acquire(ctx, id)
	if err != nil {
		return 0, time.Time{}, err
	}
	return epoch, sent.Add(m.opts.StaleAfter), nil
}

// release gives up an unloaded agent's lease. The manager's root context:
// no request waits for it.
func (m *Manager) release(id string, epoch int64) {
	if m.opts.Leases == nil || epoch == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(m.baseCtx, m.opts.LeaseTTL)
	defer cancel()
	if err := m.opts.Leases.Release(ctx, id, epoch); err != nil {
		// It expires on its own within the TTL.
		m.logger.Warn("release session lease", "session", id, "epoch", epoch, "err", err)
	}
}

// handOver gives up a shut-down agent's lease: a session whose queue
// would run (input waits, not paused) is handed over, so another replica
// takes it and runs the queue at once; its queue length is stored first,
// so the new owner's start finds it even if the notice is missed.
func (m *Manager) handOver(a *Agent) {
	if m.opts.Leases == nil || a.epoch == 0 {
		return
	}
	a.mu.Lock()
	n := len(a.nextTurn) + len(a.nextStep)
	waiting := n > 0 && !queuePaused(a.log)
	a.mu.Unlock()
	if !waiting {
		m.release(a.id, a.epoch)
		return
	}
	ctx, cancel := context.WithTimeout(m.baseCtx, m.opts.LeaseTTL)
	defer cancel()
	m.pendMu.Lock()
	delete(m.pendDirty, a.id)
	m.pendMu.Unlock()
	if err := m.store.SetPendingInbox(ctx, a.id, n); err != nil {
		// Shutdown's last flush of the counts tries again.
		m.logger.Warn("record pending inbox before the handover", "session", a.id, "err", err)
		m.pendingChanged(a.id, n)
	}
	if err := m.opts.Leases.Handover(ctx, a.id, a.epoch); err != nil {
		// It expires on its own within the TTL, and is taken over then.
		m.logger.Warn("hand over session lease", "session", a.id, "epoch", a.epoch, "err", err)
		return
	}
	m.logger.Info("handed the session over to the other replicas", "session", a.id, "queued", n)
}

// awaitStopped waits for an agent of id that lost its lease to go idle.
func (m *Manager) awaitStopped(ctx context.Context, id string) error {
	m.mu.Lock()
	a := m.stopping[id]
	m.mu.Unlock()
	if a == nil {
		return nil
	}
	if err := a.Wait(ctx); err != nil {
		return err
	}
	m.mu.Lock()
	if m.stopping[id] == a {
		delete(m.stopping, id)
	}
	m.mu.Unlock()
	return nil
}

// leaseLoop renews the held leases and the replica's heartbeat every
// Heartbeat. After a pause of the process (SIGSTOP, a frozen VM) the
// ticker's pending tick fires at once: a lease taken meanwhile is noticed
// within one round trip of waking, and its agent stops.
func (m *Manager) leaseLoop() {
	defer m.wg.Done()
	period := m.opts.Heartbeat
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-tick.C:
			m.renewLeases(period)
		}
	}
}

// renewLeases renews every held lease in one call. An agent whose lease
// was not kept, or whose lease could not be renewed and would go stale
// before the next attempt (another replica may take it then), is stopped.
func (m *Manager) renewLeases(period time.Duration) {
	held := map[string]int64{}
	m.mu.Lock()
	for id, a := range m.agents {
		if a.epoch > 0 {
			held[id] = a.epoch
		}
	}
	m.mu.Unlock()
	sent := time.Now()
	ctx, cancel := context.WithTimeout(m.baseCtx, period)
	kept, err := m.opts.Leases.Renew(ctx, held)
	cancel()
	if err != nil {
		m.logger.Warn("renew session leases", "leases", len(held), "err", err)
	}
	type loss struct {
		a   *Agent
		why LeaseLoss
	}
	var lost []loss
	m.mu.Lock()
	if m.closed {
		// Shutdown releases the leases itself, agent by agent.
		m.mu.Unlock()
		return
	}
	for id, epoch := range held {
		a := m.agents[id]
		if a == nil || a.epoch != epoch {
			continue
		}
		switch {
		case err == nil && kept[id]:
			a.leaseUntil = sent.Add(m.opts.StaleAfter)
		case err == nil:
			lost = append(lost, loss{a, LeaseTaken})
		case !time.Now().Add(period).Before(a.leaseUntil):
			lost = append(lost, loss{a, LeaseUnrenewed})
		}
	}
	m.mu.Unlock()
	for _, l := range lost {
		m.revoke(l.a, l.why)
	}
}

// LeaseLost stops the agent of id if it still runs under epoch: the
// database refused its appends (another replica took the session). It
// does not block (the batched writer calls it).
func (m *Manager) LeaseLost(id string, epoch int64) {
	m.mu.Lock()
	a := m.agents[id]
	m.mu.Unlock()
	if a == nil || a.epoch != epoch || epoch == 0 {
		return
	}
	go m.revoke(a, LeaseFenced)
}

// revoke stops an agent whose lease is gone, at once and like an unload,
// but without appending as owner: nothing more it appends is stored, its
// queue length is not recorded, its running turn is cancelled. The next
// load of the session (here or on the owner) starts from the stored log.
func (m *Manager) revoke(a *Agent, why LeaseLoss) {
	m.mu.Lock()
	if m.agents[a.id] != a {
		m.mu.Unlock()
		return
	}
	delete(m.agents, a.id)
	m.stopping[a.id] = a
	m.mu.Unlock()
	m.opts.Leases.Lost(a.id, a.epoch, why)
	m.pendMu.Lock()
	delete(m.pendDirty, a.id)
	m.pendMu.Unlock()
	a.mu.Lock()
	a.disposed, a.revoked = true, true
	a.mu.Unlock()
	m.logger.Warn("session lease lost: its agent stops on this replica", "session", a.id, "epoch", a.epoch, "reason", why)
	a.Cancel(session.CancelCause{Kind: session.CauseDisposed}, true)
	a.closeSessionTools()
	m.live.publish(LiveEvent{Kind: LiveUnloaded, Session: a.id})
}
