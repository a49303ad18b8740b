package driver_test

import (
	"context"
	"testing"
	"time"

	"harness/internal/llm/fake"
	"harness/internal/session"
)

// Drain lets the running turn end as it would have (completed, not
// cancelled), starts no turn after it, and still takes input: a message
// sent while draining is stored and stays queued (for the session's next
// owner), as does the one queued before. Then Shutdown has nothing to
// cancel.
func TestDrainLetsTheRunningTurnEnd(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	requests := 0
	h := newHarness(t, fake.Script{Responder: func(fake.Recorded) fake.Reply {
		requests++
		if requests == 1 {
			<-gate // the first turn runs until the test lets it end
		}
		return textReply("done")
	}})
	h.followup("first")
	h.waitEvent(func(ev session.Event) bool { return ev.Type == session.TypeStepStart })
	queued := h.followup("queued before the drain")

	// An expired context: the drain begins (no turn starts from now on)
	// and its wait gives up at once.
	expired, cancel := context.WithCancel(h.ctx)
	cancel()
	if err := h.mgr.Drain(expired); err == nil {
		t.Fatal("Drain with an expired context reported the turn ended")
	}
	during := h.followup("sent while draining")
	close(gate)
	ctx, cancelWait := context.WithTimeout(h.ctx, 20*time.Second)
	defer cancelWait()
	if err := h.mgr.Drain(ctx); err != nil {
		t.Fatalf("Drain: %v\n%s", err, h.dump())
	}
	h.check(h.agent)
	ends := h.turnEnds()
	if len(ends) != 1 || ends[0].Kind != session.ReasonCompleted {
		t.Fatalf("turn ends %+v, want the running turn completed and no other\n%s", ends, h.dump())
	}
	nextTurn, _, err := session.Inbox(h.events(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(nextTurn) != 2 || nextTurn[0].ID != queued.ID || nextTurn[1].ID != during.ID {
		t.Fatalf("queue after the drain: %+v, want both messages waiting\n%s", nextTurn, h.dump())
	}
	if err := h.mgr.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if ends := h.turnEnds(); len(ends) != 1 {
		t.Fatalf("Shutdown after the drain ended %d turns, want the one\n%s", len(ends), h.dump())
	}
}
