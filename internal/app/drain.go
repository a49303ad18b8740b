package app

import (
	"context"
	"fmt"
	"time"
)

// Drain is the first part of a graceful stop (cmd/web on SIGTERM; Close
// is the rest). /readyz answers 503 "draining" at once, while everything
// is still served for period, so load balancers stop sending here; this
// replica takes no session over from then on. After period no turn
// starts (input is still taken and stays queued, for the session's next
// owner), and the running turns get until ctx ends to finish. Close then
// stops what still runs (interrupted, as a stop always did) and releases
// every lease, handing the sessions whose queue waits over to the other
// replicas, which run them at once. An error says which turn did not end
// in time; it is not a failure of the stop.
func (a *App) Drain(ctx context.Context, period time.Duration) error {
	a.draining.Store(true)
	if a.Replica != nil {
		a.Replica.Drain()
	}
	a.Log.Info("draining: /readyz answers 503; every request is still served", "period", period)
	select {
	case <-time.After(period):
	case <-ctx.Done():
		return fmt.Errorf("drain period: %w", context.Cause(ctx))
	}
	if a.Manager == nil {
		return nil
	}
	running := a.Manager.Running()
	a.Log.Info("draining: no turn starts any more; waiting for the running ones", "running", running)
	if err := a.Manager.Drain(ctx); err != nil {
		return fmt.Errorf("waiting for the running turns: %w", err)
	}
	return nil
}

// Draining reports whether a graceful stop began (/readyz answers 503).
func (a *App) Draining() bool { return a.draining.Load() }
