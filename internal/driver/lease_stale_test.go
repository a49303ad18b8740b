package driver_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"harness/internal/driver"
	"harness/internal/llm/fake"
	"harness/internal/testkit/poll"
)

// switchLeases grants every lease; its renewals fail while down (the
// database is lost), and it records the losses the manager reports.
type switchLeases struct {
	mu    sync.Mutex
	epoch int64
	down  bool
	renew int
	lost  []driver.LeaseLoss
}

func (l *switchLeases) Acquire(context.Context, string) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.epoch++
	return l.epoch, nil
}

func (l *switchLeases) Renew(_ context.Context, held map[string]int64) (map[string]bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.renew++
	if l.down {
		return nil, errors.New("database unreachable")
	}
	kept := map[string]bool{}
	for id := range held {
		kept[id] = true
	}
	return kept, nil
}

func (l *switchLeases) Release(context.Context, string, int64) error  { return nil }
func (l *switchLeases) Handover(context.Context, string, int64) error { return nil }

func (l *switchLeases) Lost(_ string, _ int64, why driver.LeaseLoss) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lost = append(l.lost, why)
}

func (l *switchLeases) state() (renewals int, lost []driver.LeaseLoss) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.renew, slices.Clone(l.lost)
}

// A replica that cannot renew its leases (it lost the database) stops its
// agents once the stale bound would pass, long before the lease TTL:
// another replica may take the session then. While renewals succeed the
// agent stays, however many stale bounds go by.
func TestLeaseUnrenewedPastTheStaleBound(t *testing.T) {
	t.Parallel()
	leases := &switchLeases{}
	h := newHarness(t, fake.Script{}, withManager(func(o *driver.Options) {
		o.Leases = leases
		o.LeaseTTL = time.Hour
		o.Heartbeat = 20 * time.Millisecond
		o.StaleAfter = 100 * time.Millisecond
	}))
	poll.Eventually(t, "ten renewals", func() bool {
		n, _ := leases.state()
		return n >= 10
	}, poll.Within(30*time.Second))
	if _, ok := h.mgr.Lookup("s1"); !ok {
		_, lost := leases.state()
		t.Fatalf("the agent stopped while its renewals succeeded: %v", lost)
	}

	leases.mu.Lock()
	leases.down = true
	leases.mu.Unlock()
	poll.Eventually(t, "the agent to stop", func() bool {
		_, ok := h.mgr.Lookup("s1")
		return !ok
	}, poll.Within(30*time.Second))
	if _, lost := leases.state(); len(lost) != 1 || lost[0] != driver.LeaseUnrenewed {
		t.Fatalf("losses %v, want one unrenewed", lost)
	}
	if ev := h.live.kinds(driver.LiveUnloaded); len(ev) != 1 || ev[0].Session != "s1" {
		t.Fatalf("unloaded notices %+v, want one for s1 (its viewers are cut)", ev)
	}
}
