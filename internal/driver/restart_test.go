package driver_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"harness/internal/driver"
	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/session"
	"harness/internal/testkit"
	"harness/internal/testkit/poll"
)

// A graceful restart keeps the queue: the running turn ends aborted with
// cause shutdown, and the new process runs the queued message at start.
func TestRestartRunsQueuedMessage(t *testing.T) {
	t.Parallel()
	h := newHarness(t, script(stallAfter(fake.Frame{Text: "long"}), textReply("the queued one ran")))
	h.followup("long job")
	waitChunk(h, llm.ChunkTextDelta)
	queued := h.followup("do this next")
	h.restart()

	row, err := h.store.GetSession(h.ctx, "s1")
	if err != nil || row.PendingInbox != 1 {
		t.Fatalf("pending inbox = %d, %v; want 1", row.PendingInbox, err)
	}
	if err := h.mgr.Resume(h.ctx); err != nil {
		t.Fatal(err)
	}
	a, err := h.mgr.Get(h.ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	h.agent = a
	h.idle()
	ends := h.turnEnds()
	if len(ends) != 2 || ends[0].Kind != session.ReasonAborted || ends[0].Cause.Kind != session.CauseShutdown || ends[1].Kind != session.ReasonCompleted {
		t.Fatalf("ends %+v\n%s", ends, h.dump())
	}
	msgs := find[llm.Message](h, session.TypeUserMessage)
	if !slices.ContainsFunc(msgs, func(m llm.Message) bool { return m.ID == queued.ID }) {
		t.Fatal("the queued message never entered a turn")
	}
	hdrs := find[session.RequestHeader](h, session.TypeRequestHeader)
	if hdrs[len(hdrs)-1].Reason != session.HeaderResume {
		t.Fatalf("the new process should log a resume header, got %+v", hdrs)
	}
	if row, _ := h.store.GetSession(h.ctx, "s1"); row.PendingInbox != 0 {
		t.Fatalf("pending inbox = %d after the run", row.PendingInbox)
	}
}

// A crash while an approval is pending: on load the turn is repaired once,
// the approval withdrawn, the started call's outcome marked unknown; loading
// again appends nothing.
func TestCrashRepairWithdrawsPendingApproval(t *testing.T) {
	t.Parallel()
	h := newHarness(t, script(toolReply(call("c1", "write", map[string]any{"file_path": "f", "content": "x"}))))
	h.followup("write")
	h.waitEvent(isType(session.TypeApprovalAsked))
	if err := h.store.W.Flush(h.ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	// What a crashed process leaves on disk: the log up to the pending
	// approval, copied to a second session as its stored log.
	crashed := h.events()
	h.newSessionRow("s2")
	for _, ev := range crashed {
		h.store.W.Enqueue("s2", ev)
	}
	if err := h.store.W.Flush(h.ctx, "s2"); err != nil {
		t.Fatal(err)
	}

	a, err := h.mgr.Get(h.ctx, "s2")
	if err != nil {
		t.Fatal(err)
	}
	closers := a.Log().Events(int64(len(crashed)), a.Log().Len())
	equal(t, "closers", testkit.Types(closers), []string{"approval/decided", "tool/result", "step/end", "turn/end"})
	d, _ := session.Decode[session.ApprovalDecided](closers[0])
	r, _ := session.Decode[session.ToolResult](closers[1])
	te, _ := session.Decode[session.TurnEnd](closers[3])
	if d.Outcome != session.ApprovalCancelled || r.Error.Code != session.CodeToolOutcomeUnknown || te.Reason.Kind != session.ReasonInterrupted {
		t.Fatalf("closers %+v %+v %+v", d, r, te)
	}
	if len(a.PendingInteractions()) != 0 {
		t.Fatal("a repaired session still has pending interactions")
	}
	h.check(a)

	// Load again in a fresh process: nothing more is appended.
	n := a.Log().Len()
	h.restart()
	a2, err := h.mgr.Get(h.ctx, "s2")
	if err != nil {
		t.Fatal(err)
	}
	if a2.Log().Len() != n {
		t.Fatalf("second load grew the log from %d to %d", n, a2.Log().Len())
	}
}

// Idle agents without viewers unload after IdleUnload and reload from the
// store on demand with their whole log; a pinned agent stays.
func TestIdleUnloadAndReload(t *testing.T) {
	t.Parallel()
	h := newHarness(t, script(textReply("one"), textReply("two")),
		withManager(func(o *driver.Options) { o.IdleUnload = 20 * time.Millisecond }))
	h.followup("first")
	h.idle()
	n := h.agent.Log().Len()

	pinned := h.newSession("s2")
	_, unpin, err := h.mgr.Pin(h.ctx, "s2")
	if err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, "the idle agent to unload", func() bool {
		_, ok := h.mgr.Lookup("s1")
		return !ok
	}, poll.Within(10*time.Second))
	if a, ok := h.mgr.Lookup("s2"); !ok || a != pinned {
		t.Fatal("a pinned agent was unloaded")
	}
	unpin()
	if err := h.agent.Followup(h.ctx, userMsg("stale handle")); !errors.Is(err, driver.ErrDisposed) {
		t.Fatalf("an unloaded agent accepted input: %v", err)
	}
	a, err := h.mgr.Get(h.ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if a.Log().Len() != n {
		t.Fatalf("reloaded log has %d events, want %d", a.Log().Len(), n)
	}
	h.agent = a
	h.followup("second")
	h.idle()
	if ends := h.turnEnds(); len(ends) != 2 || ends[1].Kind != session.ReasonCompleted {
		t.Fatalf("ends %+v", ends)
	}
}

// Unload drops an idle agent at once (IdleUnload off), which reloads on
// demand and continues, but leaves a pinned agent alone.
func TestUnloadNow(t *testing.T) {
	t.Parallel()
	h := newHarness(t, script(textReply("one"), textReply("two")))
	h.followup("first")
	h.idle()
	n := h.agent.Log().Len()

	pinned := h.newSession("s2")
	_, unpin, err := h.mgr.Pin(h.ctx, "s2")
	if err != nil {
		t.Fatal(err)
	}
	if h.mgr.Unload("s2") {
		t.Fatal("a pinned agent was unloaded")
	}
	if a, ok := h.mgr.Lookup("s2"); !ok || a != pinned {
		t.Fatal("the pinned agent is gone")
	}
	unpin()
	if !h.mgr.Unload("s1") {
		t.Fatal("the idle agent was not unloaded")
	}
	if _, ok := h.mgr.Lookup("s1"); ok {
		t.Fatal("the unloaded agent is still live")
	}
	a, err := h.mgr.Get(h.ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if a.Log().Len() != n {
		t.Fatalf("reloaded log has %d events, want %d", a.Log().Len(), n)
	}
	h.agent = a
	h.followup("second")
	h.idle()
}

// A panicking hook ends its turn in error; the agent keeps working.
func TestPanickingHookEndsTurn(t *testing.T) {
	t.Parallel()
	h := newHarness(t, script(textReply("fine")))
	remove := h.agent.Hooks().OnRequest(func(ctx context.Context, p *driver.RequestPayload, next func(context.Context) (llm.CallConfig, error)) (llm.CallConfig, error) {
		panic("hook bug")
	})
	h.followup("hi")
	h.idle()
	end := h.lastTurnEnd()
	if end.Kind != session.ReasonError || end.Error.Code != driver.CodeHookFailed || !strings.Contains(end.Error.Message, "hook bug") {
		t.Fatalf("end %+v", end)
	}
	remove()
	h.followup("again")
	h.idle()
	if h.lastTurnEnd().Kind != session.ReasonCompleted {
		t.Fatal(h.dump())
	}
}
