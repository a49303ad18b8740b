package app

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"harness/internal/driver"
	"harness/internal/metrics"
	"harness/internal/models"
	"harness/internal/replica"
	"harness/internal/session"
	"harness/internal/web"
)

// The replica series (metrics.Replica) are fed from here, by wrapping what
// the manager and the replica already call (leases, the bus, the store)
// rather than from inside them. On SQLite nothing here is built and
// /metrics shows none of these series.

// replicaMeter feeds the replica series and keeps the set of leases the
// manager holds for harness_leases_held.
type replicaMeter struct {
	m *metrics.Replica
	// closing is set when the process shuts down: releases from then on
	// count as shutdown ones.
	closing atomic.Bool

	mu   sync.Mutex
	held map[string]int64 // session → epoch
}

func newReplicaMeter(reg *metrics.Metrics) *replicaMeter {
	rm := &replicaMeter{held: map[string]int64{}}
	rm.m = reg.RegisterReplica(rm.heldCount)
	return rm
}

func (rm *replicaMeter) heldCount() int {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	return len(rm.held)
}

// drop forgets a lease unless a newer term of it is held.
func (rm *replicaMeter) drop(id string, epoch int64) {
	rm.mu.Lock()
	if rm.held[id] == epoch {
		delete(rm.held, id)
	}
	rm.mu.Unlock()
}

// webForwards counts the REST requests web forwards (nil on SQLite: an
// untyped nil, so web counts none).
func (a *App) webForwards() web.ForwardCounter {
	if a.meter == nil {
		return nil
	}
	return a.meter.m
}

// takeoverMark rides the context of a takeover (takeovers.TakeOver) to
// the lease acquisition it leads to.
type takeoverMark struct{ acquired time.Time }

type takeoverKey struct{}

// meteredLeases counts the manager's lease operations.
type meteredLeases struct {
	driver.Leases
	rm *replicaMeter
}

func (l meteredLeases) Acquire(ctx context.Context, id string) (int64, error) {
	epoch, err := l.Leases.Acquire(ctx, id)
	if err != nil {
		return 0, err
	}
	l.rm.mu.Lock()
	l.rm.held[id] = epoch
	l.rm.mu.Unlock()
	reason := metrics.AcquiredOpen
	if mark, ok := ctx.Value(takeoverKey{}).(*takeoverMark); ok {
		mark.acquired = time.Now()
		reason = metrics.AcquiredTakeover
	}
	l.rm.m.LeaseAcquired(reason)
	return epoch, nil
}

// Release counts the lease given up even when the statement failed: the
// manager no longer holds it, and it expires on its own.
func (l meteredLeases) Release(ctx context.Context, id string, epoch int64) error {
	err := l.Leases.Release(ctx, id, epoch)
	l.rm.drop(id, epoch)
	reason := metrics.ReleasedUnload
	if l.rm.closing.Load() {
		reason = metrics.ReleasedShutdown
	}
	l.rm.m.LeaseReleased(reason)
	return err
}

// Handover is a release at shutdown whose session another replica takes
// at once (its queue waits).
func (l meteredLeases) Handover(ctx context.Context, id string, epoch int64) error {
	err := l.Leases.Handover(ctx, id, epoch)
	l.rm.drop(id, epoch)
	l.rm.m.LeaseReleased(metrics.ReleasedShutdown)
	return err
}

func (l meteredLeases) Lost(id string, epoch int64, why driver.LeaseLoss) {
	l.Leases.Lost(id, epoch, why)
	l.rm.drop(id, epoch)
	l.rm.m.LeaseLost(why)
}

// meteredBus reports the replica's notification listener going up and
// down.
type meteredBus struct {
	replica.Bus
	rm *replicaMeter
}

func (b meteredBus) Listen(ctx context.Context, log *slog.Logger, channels []string, h models.ListenHandler) error {
	first := true
	connected, dropped := h.Connected, h.Disconnected
	h.Connected = func() {
		b.rm.m.ListenerUp(first)
		first = false
		if connected != nil {
			connected()
		}
	}
	h.Disconnected = func(err error) {
		b.rm.m.ListenerDown()
		if dropped != nil {
			dropped(err)
		}
	}
	err := b.Bus.Listen(ctx, log, channels, h)
	b.rm.m.ListenerDown()
	return err
}

// meteredStore times the mirrors' reads: the replica reads new events
// (EventsSince) only to feed its mirrors of sessions owned elsewhere, so
// the newest event's age when read is how far the mirror lags the owner.
type meteredStore struct {
	replica.Store
	rm *replicaMeter
}

func (s meteredStore) EventsSince(ctx context.Context, id string, since int64, limit int) ([]session.Event, error) {
	evs, err := s.Store.EventsSince(ctx, id, since, limit)
	if err == nil && len(evs) > 0 && evs[len(evs)-1].Time > 0 {
		s.rm.m.MirrorLag(time.Since(time.UnixMilli(evs[len(evs)-1].Time)))
	}
	return evs, err
}
