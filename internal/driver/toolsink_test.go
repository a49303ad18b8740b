package driver_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"harness/internal/driver"
	"harness/internal/session"
	"harness/internal/tools"
)

// stallingStore is the real store whose flushes stall, as a disk that
// stopped answering, from the first tool/call on until release is closed
// or the flush's ctx is done.
type stallingStore struct {
	driver.Store
	armed   atomic.Bool
	once    sync.Once
	entered chan struct{} // closed when the first stalled flush begins
	release chan struct{}
}

func (s *stallingStore) Enqueue(id string, ev session.Event) {
	s.Store.Enqueue(id, ev)
	if ev.Type == session.TypeToolCall {
		s.armed.Store(true)
	}
}

func (s *stallingStore) Flush(ctx context.Context, id string) error {
	if s.armed.Load() {
		s.once.Do(func() { close(s.entered) })
		select {
		case <-s.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return s.Store.Flush(ctx, id)
}

// The flush that makes tool/call durable before the body runs waits with
// the step's ctx: a cancel cuts it short (no body runs after a cancel), so
// the turn ends while the disk still stalls. The turn's final flush
// outlives the cancel, and once the disk answers the store holds the whole
// log, the aborted call included.
func TestCancelCutsToolCallFlushShort(t *testing.T) {
	t.Parallel()
	st := &stallingStore{entered: make(chan struct{}), release: make(chan struct{})}
	h := newHarness(t, script(toolReply(call("c1", "slow", map[string]any{}))),
		withStore(func(s driver.Store) driver.Store { st.Store = s; return st }))
	var ran atomic.Bool
	err := h.agent.Tools().Register(tools.Definition{
		Name: "slow", Description: "never runs", Parameters: json.RawMessage(`{"type":"object"}`), Access: tools.AccessRead,
		Execute: func(ctx context.Context, c *tools.Call) (tools.Result, error) {
			ran.Store(true)
			return tools.TextResult("ran"), nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	h.followup("run it")
	select {
	case <-st.entered:
	case <-time.After(20 * time.Second):
		t.Fatalf("hang guard: the tool/call flush never began\n%s", h.dump())
	}
	h.agent.Cancel(userCancel, false)
	h.waitEvent(isType(session.TypeTurnEnd)) // appended before the final flush, which stalls
	close(st.release)
	h.idle()
	if ran.Load() {
		t.Fatal("the body ran after the cancel")
	}
	res := find[session.ToolResult](h, session.TypeToolResult)
	if len(res) != 1 || res[0].Error == nil || res[0].Error.Code != session.CodeAbortedBeforeDispatch {
		t.Fatalf("results %+v", res)
	}
	if end := h.lastTurnEnd(); end.Kind != session.ReasonAborted {
		t.Fatalf("turn end %+v", end)
	}
}
