package replica

import (
	"context"
	"time"
)

// WhileOwner returns a context that ends when the replica at addr no
// longer holds session id's lease (its heartbeat went stale, or the lease
// moved), checked every heartbeat: a request forwarded to an owner that
// hangs (paused) is given up and sent again to the session's next owner,
// instead of waiting for the old one to wake. A send under its key is
// stored once either way; whatever the old owner does on waking is fenced.
func (r *Replica) WhileOwner(ctx context.Context, id, addr string) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		t := time.NewTicker(r.d.Heartbeat)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			_, holder, ok, err := r.d.Leases.Holder(ctx, id)
			if err == nil && (!ok || holder != addr) {
				cancel()
				return
			}
		}
	}()
	return ctx, cancel
}
