package driver_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"harness/internal/driver"
	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/session"
	"harness/internal/testkit/poll"
	"harness/internal/tools"
)

var userCancel = session.CancelCause{Kind: session.CauseUser, UserID: "u1"}

// stallAfter streams frames then stalls until the client goes away.
func stallAfter(frames ...fake.Frame) fake.Reply {
	return fake.Reply{Frames: frames, Fault: &fake.Fault{Kind: fake.FaultStall, After: len(frames)}}
}

func waitChunk(h *harness, typ llm.ChunkType) {
	h.t.Helper()
	h.waitEvent(func(ev session.Event) bool {
		if ev.Type != session.TypeAssistantChunk {
			return false
		}
		c, _ := session.Decode[session.AssistantChunk](ev)
		return c.Chunk.Type == typ
	})
}

func chunkSeqs(h *harness) []int64 {
	var seqs []int64
	for _, ev := range h.events() {
		if ev.Type == session.TypeAssistantChunk {
			seqs = append(seqs, ev.Seq)
		}
	}
	return seqs
}

// Case 31: cancel mid-stream keeps the visible text as an interrupted
// message citing every chunk; the next request replays it.
func TestCase31CancelMidStreamKeepsText(t *testing.T) {
	t.Parallel()
	h := newHarness(t, script(stallAfter(fake.Frame{Text: "partial"}), textReply("continuing")))
	h.followup("tell me a story")
	waitChunk(h, llm.ChunkTextDelta)
	h.agent.Cancel(userCancel, false)
	h.idle()
	ev := h.waitEvent(isType(session.TypeAssistantMessage))
	am, _ := session.Decode[session.AssistantMessage](ev)
	if !am.Interrupted || am.Message.Text() != "partial" || len(am.Message.Content) != 1 {
		t.Fatalf("interrupted message %+v", am)
	}
	if !slices.Equal(ev.SourceEventSeqs, chunkSeqs(h)) {
		t.Fatalf("sources %v, chunks %v", ev.SourceEventSeqs, chunkSeqs(h))
	}
	end := h.lastTurnEnd()
	if end.Kind != session.ReasonAborted || end.Cause == nil || end.Cause.Kind != session.CauseUser || end.Cause.UserID != "u1" {
		t.Fatalf("end %+v", end)
	}
	tail := h.types()
	equal(t, "tail", tail[len(tail)-4:], []string{"assistant/chunk*", "assistant/message", "step/end", "turn/end"})

	h.followup("go on")
	h.idle()
	msgs := h.fake.Requests()[1].Messages()
	found := false
	for _, m := range msgs {
		if m.Role == "assistant" && m.Text() == "partial" {
			found = true
		}
	}
	if !found {
		t.Fatalf("the next request does not replay the partial text: %+v", msgs)
	}
}

// Case 32: cancel after reasoning and usage keeps the reasoning and usage.
func TestCase32CancelKeepsReasoningAndUsage(t *testing.T) {
	t.Parallel()
	p := &chunkProvider{name: "inproc", plan: []providerCall{{block: true, chunks: []llm.Chunk{
		{Type: llm.ChunkBlockStart, Index: 0, BlockType: llm.BlockReasoning},
		{Type: llm.ChunkReasoningDelta, Index: 0, Text: "pondering"},
		{Type: llm.ChunkUsage, Usage: &llm.Usage{InputTokens: 50, OutputTokens: 3}},
	}}}}
	h := newHarness(t, script(), withProvider(p))
	h.followup("think")
	waitChunk(h, llm.ChunkUsage)
	h.agent.Cancel(userCancel, false)
	h.idle()
	am := find[session.AssistantMessage](h, session.TypeAssistantMessage)
	if len(am) != 1 || !am[0].Interrupted || am[0].Usage == nil || am[0].Usage.InputTokens != 50 ||
		len(am[0].Message.Content) != 1 || am[0].Message.Content[0].Type != llm.BlockReasoning {
		t.Fatalf("%+v", am)
	}
}

// Case 33: cancel while a tool call streams after text keeps only the text
// and never logs the call.
func TestCase33CancelDropsHalfToolCall(t *testing.T) {
	t.Parallel()
	h := newHarness(t, script(stallAfter(
		fake.Frame{Text: "Let me check."},
		fake.Frame{Tool: &fake.ToolFragment{Index: 0, ID: "c1", Name: "bash", Arguments: `{"comm`}},
	)))
	h.followup("check")
	waitChunk(h, llm.ChunkToolCallDelta)
	h.agent.Cancel(userCancel, false)
	h.idle()
	am := find[session.AssistantMessage](h, session.TypeAssistantMessage)
	if len(am) != 1 || len(am[0].Message.Content) != 1 || am[0].Message.Text() != "Let me check." {
		t.Fatalf("%+v", am)
	}
	if len(find[session.ToolCall](h, session.TypeToolCall)) != 0 {
		t.Fatal("a half-streamed tool call was logged")
	}
}

// Case 34: cancel before any visible delta logs no assistant message.
func TestCase34CancelBeforeVisible(t *testing.T) {
	t.Parallel()
	h := newHarness(t, script(fake.Reply{Fault: &fake.Fault{Kind: fake.FaultStall, BeforeHeaders: true}}))
	h.followup("hi")
	h.waitEvent(isType(session.TypeRequestContext))
	h.agent.Cancel(userCancel, false)
	h.idle()
	if n := len(find[session.AssistantMessage](h, session.TypeAssistantMessage)); n != 0 {
		t.Fatalf("%d assistant messages", n)
	}
	if h.lastTurnEnd().Kind != session.ReasonAborted {
		t.Fatal(h.dump())
	}
}

// Case 35: a cancel right after the assistant message skips its tool calls
// with synthetic aborted pairs; the next turn replays them.
func TestCase35CancelBeforeToolsRun(t *testing.T) {
	t.Parallel()
	h := newHarness(t, script(
		toolReply(call("c1", "bash", map[string]any{"command": "touch ran", "description": "touch"})),
		textReply("ok"),
	))
	_ = h.agent.SetMode(h.ctx, session.ModeAuto, nil)
	_, cancelSub := h.agent.Log().Subscribe(func(ev session.Event) {
		if ev.Type == session.TypeAssistantMessage {
			h.agent.Cancel(userCancel, false)
		}
	})
	h.followup("touch it")
	h.idle()
	cancelSub()
	res := find[session.ToolResult](h, session.TypeToolResult)
	if len(res) != 1 || res[0].Error == nil || res[0].Error.Code != session.CodeAbortedBeforeDispatch || !res[0].Message.Content[0].IsError {
		t.Fatalf("results %+v", res)
	}
	if len(find[session.ToolCall](h, session.TypeToolCall)) != 1 {
		t.Fatal("want the synthetic tool/call")
	}
	if fileExists(h.ws, "ran") {
		t.Fatal("the tool body ran")
	}
	h.followup("again")
	h.idle()
	msgs := h.fake.Requests()[1].Messages()
	var tool *fake.WireMessage
	for i := range msgs {
		if msgs[i].Role == "tool" {
			tool = &msgs[i]
		}
	}
	if tool == nil || !strings.Contains(tool.Text(), "aborted before dispatch") {
		t.Fatalf("next request lacks the aborted result: %+v", msgs)
	}
}

// Case 36: cancel without keepInbox drops queued prompts durably.
func TestCase36CancelClearsQueue(t *testing.T) {
	t.Parallel()
	h := newHarness(t, script(stallAfter(fake.Frame{Text: "working"})))
	h.followup("long job")
	waitChunk(h, llm.ChunkTextDelta)
	h.followup("queued one")
	h.followup("queued two")
	h.agent.Cancel(userCancel, false)
	h.idle()
	if n := len(h.turnEnds()); n != 1 || h.lastTurnEnd().Kind != session.ReasonAborted {
		t.Fatalf("turns %+v", h.turnEnds())
	}
	var canceled int
	for _, sp := range find[session.InboxSpliced](h, session.TypeInboxSpliced) {
		if sp.Outcome == session.OutcomeCanceled {
			canceled += sp.RemovedCount
		}
	}
	if canceled != 2 || len(h.agent.Queue().Queued) != 0 || len(h.fake.Requests()) != 1 {
		t.Fatalf("canceled %d, queue %+v, %d requests", canceled, h.agent.Queue(), len(h.fake.Requests()))
	}
	if d := h.live.kinds(driver.LiveDiscarded); len(d) != 2 {
		t.Fatalf("%d discarded notifications", len(d))
	}
}

// Case 37: cancel with keepInbox (Stop) aborts the turn; the queued prompt
// and the steer sent before the Stop survive and stay queued, the agent
// idle: nothing starts by itself. The next waking input runs them first
// (the steer with the queued prompt, in one turn), then itself.
func TestCase37CancelKeepsQueue(t *testing.T) {
	t.Parallel()
	h := newHarness(t, script(stallAfter(fake.Frame{Text: "working"}), textReply("queued answered"), textReply("after answered")))
	h.followup("long job")
	waitChunk(h, llm.ChunkTextDelta)
	queued := h.followup("queued")
	steer := userMsg("steer sent before the stop")
	if err := h.agent.Steer(h.ctx, steer); err != nil {
		t.Fatal(err)
	}
	h.agent.Cancel(userCancel, true)
	h.idle()
	ends := h.turnEnds()
	if len(ends) != 1 || ends[0].Kind != session.ReasonAborted || ends[0].Cause.Kind != session.CauseUser {
		t.Fatalf("ends %+v", ends)
	}
	q := h.agent.Queue()
	if len(q.Queued) != 1 || q.Queued[0].ID != queued.ID || len(q.Steering) != 1 || q.Steering[0].ID != steer.ID {
		t.Fatalf("queue after Stop %+v", q)
	}
	// Proves a negative: the paused queue does not start within 100 ms.
	time.Sleep(100 * time.Millisecond)
	if h.agent.Status() != driver.StatusIdle || len(h.fake.Requests()) != 1 || len(h.turnEnds()) != 1 {
		t.Fatalf("the paused queue started by itself:\n%s", h.dump())
	}
	after := h.followup("after the stop")
	h.idle()
	ends = h.turnEnds()
	if len(ends) != 3 || ends[1].Kind != session.ReasonCompleted || ends[2].Kind != session.ReasonCompleted {
		t.Fatalf("ends %+v", ends)
	}
	if got := enteredPrompts(h); !slices.Equal(got[1:], []string{steer.ID, queued.ID, after.ID}) {
		t.Fatalf("entered %v", got)
	}
}

// Case 38: a waking send while the turn is aborting is latched and runs
// after convergence; removed before that, nothing runs; after a disposed
// cancel nothing is latched (the send is queued and waits).
func TestCase38WakeLatch(t *testing.T) {
	t.Parallel()
	t.Run("runs after convergence", func(t *testing.T) {
		t.Parallel()
		h, release := latchHarness(t, userCancel)
		late := userMsg("sent while aborting")
		if err := h.agent.Steer(h.ctx, late); err != nil {
			t.Fatal(err)
		}
		if q := h.agent.Queue(); len(q.Queued) != 1 || len(q.Steering) != 0 {
			t.Fatalf("a waking send while aborting must go to the next turn: %+v", q)
		}
		close(release)
		h.idle()
		if ends := h.turnEnds(); len(ends) != 2 || ends[1].Kind != session.ReasonCompleted {
			t.Fatalf("ends %+v", ends)
		}
	})
	t.Run("removed before convergence", func(t *testing.T) {
		t.Parallel()
		h, release := latchHarness(t, userCancel)
		late := h.followup("sent while aborting")
		if err := h.agent.RemovePending(h.ctx, late.ID); err != nil {
			t.Fatal(err)
		}
		close(release)
		h.idle()
		if n := len(h.turnEnds()); n != 1 {
			t.Fatalf("%d turns, want only the aborted one", n)
		}
	})
	t.Run("disposed cancel latches nothing", func(t *testing.T) {
		t.Parallel()
		h, release := latchHarness(t, session.CancelCause{Kind: session.CauseDisposed})
		late := h.followup("sent while disposing")
		close(release)
		h.idle()
		ends := h.turnEnds()
		if len(ends) != 1 || ends[0].Kind != session.ReasonAborted || ends[0].Cause.Kind != session.CauseDisposed {
			t.Fatalf("ends %+v", ends)
		}
		if q := h.agent.Queue(); len(q.Queued) != 1 || q.Queued[0].ID != late.ID || len(h.fake.Requests()) != 0 {
			t.Fatalf("queue %+v, %d requests", q, len(h.fake.Requests()))
		}
	})
	t.Run("removed agent refuses input", func(t *testing.T) {
		t.Parallel()
		h, release := latchHarness(t, userCancel)
		done := make(chan error, 1)
		go func() { done <- h.mgr.Remove(h.ctx, h.agent.ID()) }()
		poll.Eventually(t, "the removed agent to refuse input", func() bool {
			return errors.Is(h.agent.Followup(h.ctx, userMsg("too late")), driver.ErrDisposed)
		}, poll.Every(time.Millisecond))
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if n := len(h.turnEnds()); n != 1 || len(h.fake.Requests()) != 0 {
			t.Fatalf("%d turns, %d requests after a removal", n, len(h.fake.Requests()))
		}
	})
}

// latchHarness has a turn stuck in a pre-step hook after a cancel, so the
// test can send while the activity is aborting.
func latchHarness(t *testing.T, cause session.CancelCause) (*harness, chan struct{}) {
	h := newHarness(t, script(textReply("latched ran")))
	entered := make(chan struct{})
	release := make(chan struct{})
	var first atomic.Bool
	h.agent.Hooks().OnPreStep(func(ctx context.Context, p *driver.PreStepPayload, next func(context.Context) (driver.PreStepDecision, error)) (driver.PreStepDecision, error) {
		if first.CompareAndSwap(false, true) {
			close(entered)
			<-release
		}
		return next(ctx)
	})
	h.followup("first")
	<-entered
	h.agent.Cancel(cause, true)
	return h, release
}

// Case 39: pool cap 2, four parallel calls, cancel after two started: the
// two running bodies finish and commit, the other two get synthetic pairs,
// all in model order; their contexts wait in the inbox.
func TestCase39ParallelPoolCancel(t *testing.T) {
	t.Parallel()
	var calls []fake.ToolCall
	for _, id := range []string{"c1", "c2", "c3", "c4"} {
		calls = append(calls, call(id, "slow", map[string]any{}))
	}
	h := newHarness(t, script(toolReply(calls...)), withMaxParallel(2))
	started := make(chan string, 4)
	release := make(chan struct{})
	err := h.agent.Tools().Register(tools.Definition{
		Name: "slow", Description: "waits", Parameters: json.RawMessage(`{"type":"object"}`), Access: tools.AccessRead,
		ConcurrencySafe: func(json.RawMessage) bool { return true },
		Execute: func(ctx context.Context, c *tools.Call) (tools.Result, error) {
			started <- c.ID
			<-release
			c.DeferContext(llm.UserText("context from "+c.ID, llm.Source{Kind: llm.SourcePlugin, Plugin: "test"}))
			return tools.TextResult("done " + c.ID), nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	h.followup("run four")
	<-started
	<-started
	h.agent.Cancel(userCancel, false)
	close(release)
	h.idle()
	var callIDs, resultIDs []string
	for _, c := range find[session.ToolCall](h, session.TypeToolCall) {
		callIDs = append(callIDs, c.CallID)
	}
	var codes []string
	for _, r := range find[session.ToolResult](h, session.TypeToolResult) {
		resultIDs = append(resultIDs, r.Message.Source.CallID)
		code := ""
		if r.Error != nil {
			code = r.Error.Code
		}
		codes = append(codes, code)
	}
	equal(t, "calls", callIDs, []string{"c1", "c2", "c3", "c4"})
	equal(t, "results", resultIDs, []string{"c1", "c2", "c3", "c4"})
	if codes[2] != session.CodeAbortedBeforeDispatch || codes[3] != session.CodeAbortedBeforeDispatch {
		t.Fatalf("codes %v", codes)
	}
	if q := h.agent.Queue(); len(q.Steering) != 2 {
		t.Fatalf("contexts of c1/c2 should wait in the inbox: %+v", q)
	}
	if h.lastTurnEnd().Kind != session.ReasonAborted {
		t.Fatal(h.dump())
	}
}

// Case 40: cancel during the retry backoff: no assistant message for the
// failed attempt, the turn ends aborted, no further request.
func TestCase40CancelDuringRetryWait(t *testing.T) {
	t.Parallel()
	slow := llm.DefaultRetryPolicy()
	slow.InitialDelay, slow.MaxDelay = 30*time.Second, 30*time.Second
	h := newHarness(t, script(fake.Reply{Error: &fake.HTTPError{Status: 503, Message: "overloaded"}}, textReply("never")), withRetry(slow))
	h.followup("hi")
	h.waitEvent(isType(session.TypeLLMRetry))
	h.agent.Cancel(userCancel, false)
	h.idle()
	if len(find[session.AssistantMessage](h, session.TypeAssistantMessage)) != 0 || len(find[session.LLMRetryStarted](h, session.TypeLLMRetryStarted)) != 0 {
		t.Fatal(h.dump())
	}
	if h.lastTurnEnd().Kind != session.ReasonAborted || len(h.fake.Requests()) != 1 {
		t.Fatalf("end %+v, %d requests", h.lastTurnEnd(), len(h.fake.Requests()))
	}
}

// Case 41: cancel on an idle agent with nothing queued is a no-op.
func TestCase41CancelIdle(t *testing.T) {
	t.Parallel()
	h := newHarness(t, script(textReply("fine")))
	h.agent.Cancel(userCancel, false)
	if h.agent.Log().Len() != 0 {
		t.Fatalf("idle cancel appended %v", h.types())
	}
	h.followup("hi")
	h.idle()
	if h.lastTurnEnd().Kind != session.ReasonCompleted {
		t.Fatal(h.dump())
	}
}

// Case 61 (driver part): a rate limit then success retries in the same turn
// and step; the assistant message cites only the successful attempt's
// chunks; a budget of retries then ends in the last error.
func TestCase61Retry(t *testing.T) {
	t.Parallel()
	t.Run("then success", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, script(fake.Reply{Error: &fake.HTTPError{Status: 429, Message: "slow down"}}, textReply("made it")))
		h.followup("hi")
		h.idle()
		retries := find[session.LLMRetry](h, session.TypeLLMRetry)
		if len(retries) != 1 || retries[0].Retry != 1 || retries[0].Turn != 1 || retries[0].Step != 1 || retries[0].Failure.Code != llm.CodeRateLimit {
			t.Fatalf("retries %+v", retries)
		}
		if len(find[session.LLMRetryStarted](h, session.TypeLLMRetryStarted)) != 1 {
			t.Fatal("no llm/retry-started")
		}
		var started int64
		for _, ev := range h.events() {
			if ev.Type == session.TypeLLMRetryStarted {
				started = ev.Seq
			}
		}
		ev := h.waitEvent(isType(session.TypeAssistantMessage))
		for _, s := range ev.SourceEventSeqs {
			if s < started {
				t.Fatalf("message cites chunk %d of the failed attempt", s)
			}
		}
		if len(find[session.StepBoundary](h, session.TypeStepStart)) != 1 || h.lastTurnEnd().Kind != session.ReasonCompleted {
			t.Fatal(h.dump())
		}
	})
	t.Run("budget exhausted", func(t *testing.T) {
		t.Parallel()
		var replies []fake.Reply
		for range 7 {
			replies = append(replies, fake.Reply{Error: &fake.HTTPError{Status: 503, Message: "down"}})
		}
		h := newHarness(t, script(replies...))
		h.followup("hi")
		h.idle()
		if n := len(find[session.LLMRetry](h, session.TypeLLMRetry)); n != 5 {
			t.Fatalf("%d retries, want 5", n)
		}
		end := h.lastTurnEnd()
		if end.Kind != session.ReasonError || end.Error.Code != llm.CodeServer || len(h.fake.Requests()) != 6 {
			t.Fatalf("end %+v, %d requests", end, len(h.fake.Requests()))
		}
	})
}
