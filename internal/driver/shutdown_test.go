package driver_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"harness/internal/driver"
	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/session"
)

// stallStore is the real store whose flushes and pending-inbox records
// stall until released, ignoring their context as a dead disk does.
type stallStore struct {
	driver.Store
	flush   atomic.Bool // stall Flush
	pending atomic.Bool // stall SetPendingInbox
	release chan struct{}
}

func (s *stallStore) Flush(ctx context.Context, id string) error {
	if s.flush.Load() {
		<-s.release
	}
	return s.Store.Flush(ctx, id)
}

func (s *stallStore) SetPendingInbox(ctx context.Context, id string, n int) error {
	if s.pending.Load() {
		<-s.release
	}
	return s.Store.SetPendingInbox(ctx, id, n)
}

// Shutdown keeps to its budget when the store stalls: with a 1 s deadline
// it returns within the deadline plus a generous margin, with an error that
// names what it abandoned; a second call returns nil. Once the store is
// released, a restart loads a valid log that still holds the queued
// message.
func TestShutdownWithinBudgetOnStalledStore(t *testing.T) {
	t.Parallel()
	const (
		budget = time.Second
		margin = 3 * time.Second // generous: the bound is the budget
	)
	cases := []struct {
		name           string
		flush, pending bool
		want           string // in the error: what was abandoned
	}{
		{name: "flush", flush: true, want: "session s1"},
		{name: "pending inbox", pending: true, want: "pending inbox"},
		{name: "both", flush: true, pending: true, want: "session s1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := &stallStore{release: make(chan struct{})}
			h := newHarness(t, script(stallAfter(fake.Frame{Text: "long"}), textReply("the queued one ran")),
				withStore(func(s driver.Store) driver.Store {
					if st.Store != nil {
						return s // the restarted manager's store does not stall
					}
					st.Store = s
					return st
				}))
			h.followup("long job")
			waitChunk(h, llm.ChunkTextDelta)
			// The send's own flush goes through (it is acknowledged); the
			// queue length it records in the background stalls.
			st.pending.Store(tc.pending)
			queued := h.followup("do this next")
			st.flush.Store(tc.flush)

			ctx, cancel := context.WithTimeout(context.Background(), budget)
			defer cancel()
			done := make(chan error, 1)
			start := time.Now()
			go func() { done <- h.mgr.Shutdown(ctx) }()
			var err error
			select {
			case err = <-done:
			case <-time.After(budget + margin):
				close(st.release)
				t.Fatalf("Shutdown still waiting %v after its %v deadline", margin, budget)
			}
			took := time.Since(start)
			t.Logf("Shutdown returned after %v: %v", took.Round(time.Millisecond), err)
			if !errors.Is(err, driver.ErrShutdownAbandoned) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err = %v, want ErrShutdownAbandoned and the deadline", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to name %q", err, tc.want)
			}
			if err := h.mgr.Shutdown(context.Background()); err != nil {
				t.Fatalf("second Shutdown: %v", err)
			}

			// Released, the old driver ends its turn; its last events are
			// stored before the restart reads the log.
			st.flush.Store(false)
			st.pending.Store(false)
			close(st.release)
			wctx, wcancel := context.WithTimeout(h.ctx, 10*time.Second)
			defer wcancel()
			if err := h.agent.Wait(wctx); err != nil {
				t.Fatalf("the old driver did not stop once released: %v", err)
			}
			if err := h.store.Flush(wctx, "s1"); err != nil {
				t.Fatal(err)
			}
			h.restart()
			a, err := h.mgr.Get(h.ctx, "s1")
			if err != nil {
				t.Fatal(err)
			}
			h.agent = a
			if err := session.CheckInvariants(h.events()); err != nil {
				t.Fatalf("log after restart: %v\n%s", err, h.dump())
			}
			nextTurn, _, err := session.Inbox(h.events(), 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(nextTurn) != 1 || nextTurn[0].ID != queued.ID {
				t.Fatalf("queued message lost: inbox %+v\n%s", nextTurn, h.dump())
			}
		})
	}
}
