package driver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"harness/internal/driver"
	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/session"
	"harness/internal/testkit"
	"harness/internal/tools"
)

// Case 12: followup("hi") with a text reply.
func TestCase12FollowupTextReply(t *testing.T) {
	t.Parallel()
	h := newHarness(t, script(textReply("hello there")))
	h.followup("hi")
	h.idle()
	equal(t, "events", h.types(), []string{
		"agent/inbox/spliced", "turn/start", "agent/inbox/spliced", "step/start",
		"user/message", "user/message", "session/title", "request/header", "request/context",
		"assistant/chunk*", "assistant/message", "step/end", "turn/end",
	})
	if got := h.lastTurnEnd(); got.Kind != session.ReasonCompleted {
		t.Fatalf("turn end %+v", got)
	}
	equal(t, "derived", derivedRoles(h.agent.Log().DeriveMessages()),
		[]string{"user:text", "user:runtime-context", "assistant:text"})
	msgs := find[session.AssistantMessage](h, session.TypeAssistantMessage)
	if msgs[0].Usage == nil || msgs[0].Message.Text() != "hello there" {
		t.Fatalf("assistant message %+v", msgs[0])
	}
	st := h.live.statuses()
	if len(st) != 2 || st[0] != driver.StatusRunning || st[1] != driver.StatusIdle {
		t.Fatalf("statuses %v", st)
	}
	if titles := h.live.kinds(driver.LiveTitle); len(titles) != 1 || h.agent.Log().State().Title != "hi" {
		t.Fatalf("title notices %v, title %q", titles, h.agent.Log().State().Title)
	}
}

// Case 13: a tool round trip: two model calls in one turn, the second sees
// the tool result.
func TestCase13ToolRoundTrip(t *testing.T) {
	t.Parallel()
	h := newHarness(t, script(
		toolReply(call("c1", "read", map[string]any{"file_path": "notes.txt"})),
		textReply("the file says hello"),
	))
	writeFile(t, h.ws, "notes.txt", "hello\n")
	h.followup("what is in notes.txt?")
	h.idle()
	equal(t, "events", h.types(), []string{
		"agent/inbox/spliced", "turn/start", "agent/inbox/spliced", "step/start",
		"user/message", "user/message", "session/title", "request/header", "request/context",
		"assistant/chunk*", "assistant/message", "tool/call", "tool/result", "step/end",
		"step/start", "assistant/chunk*", "assistant/message", "step/end", "turn/end",
	})
	reqs := h.fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(reqs))
	}
	msgs := reqs[1].Messages()
	last := msgs[len(msgs)-1]
	if last.Role != "tool" || last.ToolCallID != "c1" || !strings.Contains(last.Text(), "hello") {
		t.Fatalf("second request ends with %+v, want the tool result", last)
	}
	res := find[session.ToolResult](h, session.TypeToolResult)[0]
	if res.Message.Content[0].IsError {
		t.Fatalf("read failed: %+v", res)
	}
	if h.lastTurnEnd().Kind != session.ReasonCompleted || len(h.turnEnds()) != 1 {
		t.Fatalf("turns %+v", h.turnEnds())
	}
}

// Case 14: three followups sent while idle run as three turns, in order, one
// prompt each.
func TestCase14ThreeFollowups(t *testing.T) {
	t.Parallel()
	h := newHarness(t, script(textReply("a1"), textReply("a2"), textReply("a3")))
	var sent []string
	for _, p := range []string{"one", "two", "three"} {
		sent = append(sent, h.followup(p).ID)
	}
	h.idle()
	starts := find[session.TurnStart](h, session.TypeTurnStart)
	if len(starts) != 3 || starts[0].Turn != 1 || starts[1].Turn != 2 || starts[2].Turn != 3 {
		t.Fatalf("turns %+v", starts)
	}
	var prompts []string
	for _, m := range find[llm.Message](h, session.TypeUserMessage) {
		if m.Source.Kind == llm.SourceUser {
			prompts = append(prompts, m.ID)
		}
	}
	equal(t, "prompts in order", prompts, sent)
	for i, r := range h.fake.Requests() {
		users := 0
		for _, m := range r.Messages() {
			if m.Role == "user" && !strings.HasPrefix(m.Text(), "Current runtime context") {
				users++
			}
		}
		if users != i+1 {
			t.Fatalf("request %d carries %d prompts, want %d", i, users, i+1)
		}
	}
}

// Case 15: an idle inject only queues; the next followup enters it first.
func TestCase15IdleInject(t *testing.T) {
	t.Parallel()
	h := newHarness(t, script(textReply("ok")))
	ctxMsg := llm.UserText("context: the build is red", llm.Source{Kind: llm.SourcePlugin, Plugin: "test"})
	if err := h.agent.Inject(h.ctx, ctxMsg); err != nil {
		t.Fatal(err)
	}
	equal(t, "after inject", h.types(), []string{"agent/inbox/spliced"})
	if h.agent.Status() != driver.StatusIdle {
		t.Fatal("inject woke the agent")
	}
	if sp := find[session.InboxSpliced](h, session.TypeInboxSpliced)[0]; sp.Target != session.TargetNextStep {
		t.Fatalf("inject went to %s", sp.Target)
	}
	prompt := h.followup("fix it")
	h.idle()
	var entered []string
	for _, m := range find[llm.Message](h, session.TypeUserMessage) {
		entered = append(entered, m.ID)
	}
	if len(entered) != 3 || entered[0] != ctxMsg.ID || entered[1] != prompt.ID {
		t.Fatalf("entered %v, want [context, prompt, snapshot]", entered)
	}
}

// Case 16: steer while idle starts a turn at once: before Steer returns the
// status is running and the log holds turn/start and the claim (upstream
// §2.4); a second steer during step 1 enters as step 2 of the same turn.
func TestCase16Steer(t *testing.T) {
	t.Parallel()
	slow := fake.Reply{Text: "working on it", Chunks: 20, Delay: 20 * time.Millisecond}
	h := newHarness(t, script(slow, textReply("done with both")))
	first := userMsg("start")
	if err := h.agent.Steer(h.ctx, first); err != nil {
		t.Fatal(err)
	}
	if h.agent.Status() != driver.StatusRunning {
		t.Fatal("steer while idle did not start the driver synchronously")
	}
	// What the waking send did synchronously is in the log when it returns.
	opened := h.agent.Log().Events(0, 3)
	if got := testkit.Types(opened); !slices.Equal(got, []string{"agent/inbox/spliced", "turn/start", "agent/inbox/spliced"}) {
		t.Fatalf("log when Steer returned: %v", got)
	}
	claim, _ := session.Decode[session.InboxSpliced](opened[2])
	if claim.Target != session.TargetNextStep || claim.RemovedCount != 1 || len(h.agent.Queue().Steering) != 0 {
		t.Fatalf("claim %+v queue %+v", claim, h.agent.Queue())
	}
	if cl := h.live.kinds(driver.LiveClaimed); len(cl) != 1 || cl[0].Message.ID != first.ID || cl[0].Turn != 1 {
		t.Fatalf("claimed notifications %+v", cl)
	}
	h.waitEvent(isType(session.TypeAssistantChunk))
	second := userMsg("also this")
	if err := h.agent.Steer(h.ctx, second); err != nil {
		t.Fatal(err)
	}
	h.idle()
	if n := len(find[session.TurnStart](h, session.TypeTurnStart)); n != 1 {
		t.Fatalf("%d turns, want 1\n%s", n, h.dump())
	}
	steps := find[session.StepBoundary](h, session.TypeStepStart)
	if len(steps) != 2 {
		t.Fatalf("%d steps, want 2", len(steps))
	}
	var step2 []string
	inStep2 := false
	for _, ev := range h.events() {
		if ev.Type == session.TypeStepStart && len(step2) == 0 {
			b, _ := session.Decode[session.StepBoundary](ev)
			inStep2 = b.Step == 2
		}
		if inStep2 && ev.Type == session.TypeUserMessage {
			m, _ := session.Decode[llm.Message](ev)
			step2 = append(step2, m.ID)
		}
	}
	if len(step2) == 0 || step2[0] != second.ID {
		t.Fatalf("step 2 entered %v, want the second steer first", step2)
	}
}

// Case 17: a pre-step reject blocks the turn with no step and no model
// call; a prompt queued while the blocked turn ran stays queued (the driver
// stops) until the next wake, which runs it before the waking prompt.
func TestCase17PreStepReject(t *testing.T) {
	t.Parallel()
	h := newHarness(t, script(textReply("parked one ran"), textReply("waking one ran")))
	entered := make(chan struct{})
	release := make(chan struct{})
	remove := h.agent.Hooks().OnPreStep(func(ctx context.Context, p *driver.PreStepPayload, next func(context.Context) (driver.PreStepDecision, error)) (driver.PreStepDecision, error) {
		close(entered)
		<-release
		return driver.PreStepDecision{Reject: true}, nil
	})
	h.followup("blocked one")
	<-entered
	parked := h.followup("queued during the blocked turn")
	close(release)
	h.idle()
	equal(t, "events", h.types(), []string{"agent/inbox/spliced", "turn/start", "agent/inbox/spliced", "agent/inbox/spliced", "turn/end"})
	if h.lastTurnEnd().Kind != session.ReasonBlocked || len(h.fake.Requests()) != 0 {
		t.Fatalf("end %+v, %d requests", h.lastTurnEnd(), len(h.fake.Requests()))
	}
	if q := h.agent.Queue(); len(q.Queued) != 1 || q.Queued[0].ID != parked.ID || h.agent.Status() != driver.StatusIdle {
		t.Fatalf("after a blocked turn the prompt must stay parked: %+v %s", q, h.agent.Status())
	}
	remove()
	waking := h.followup("allowed")
	h.idle()
	ends := h.turnEnds()
	if len(ends) != 3 || ends[1].Kind != session.ReasonCompleted || ends[2].Kind != session.ReasonCompleted || len(h.fake.Requests()) != 2 {
		t.Fatalf("after removing the hook: %+v, %d requests", ends, len(h.fake.Requests()))
	}
	if got := enteredPrompts(h); !slices.Equal(got, []string{parked.ID, waking.ID}) {
		t.Fatalf("entered %v, want the parked prompt, then the waking one", got)
	}
}

// enteredPrompts lists the ids of the people's messages entered as
// user/message, in log order.
func enteredPrompts(h *harness) []string {
	var out []string
	for _, m := range find[llm.Message](h, session.TypeUserMessage) {
		if m.Source.Kind == llm.SourceUser {
			out = append(out, m.ID)
		}
	}
	return out
}

// Case 18: a failing pre-step hook ends the turn in error with no step and
// reports agent/error. Steering sent during the failing turn stays pending
// (the driver stops after a failed turn) until the next wake, then runs
// with it.
func TestCase18PreStepError(t *testing.T) {
	t.Parallel()
	h := newHarness(t, script(textReply("second turn answer")))
	entered := make(chan struct{})
	release := make(chan struct{})
	var calls atomic.Int32
	h.agent.Hooks().OnPreStep(func(ctx context.Context, p *driver.PreStepPayload, next func(context.Context) (driver.PreStepDecision, error)) (driver.PreStepDecision, error) {
		if calls.Add(1) == 1 {
			close(entered)
			<-release
			return driver.PreStepDecision{}, errors.New("policy service down")
		}
		return next(ctx)
	})
	h.followup("first")
	<-entered
	steer := userMsg("steered meanwhile")
	if err := h.agent.Steer(h.ctx, steer); err != nil {
		t.Fatal(err)
	}
	close(release)
	h.idle()
	ends := h.turnEnds()
	if len(ends) != 1 || ends[0].Kind != session.ReasonError || !strings.Contains(ends[0].Error.Message, "policy service down") {
		t.Fatalf("turn ends %+v", ends)
	}
	// The failed turn has no step.
	equal(t, "events", h.types(), []string{"agent/inbox/spliced", "turn/start", "agent/inbox/spliced", "agent/inbox/spliced", "turn/end"})
	if errs := h.live.kinds(driver.LiveError); len(errs) != 1 || errs[0].Turn != 1 || !strings.Contains(errs[0].Error.Message, "policy service down") {
		t.Fatalf("agent/error notifications %+v", errs)
	}
	if q := h.agent.Queue(); len(q.Steering) != 1 || q.Steering[0].ID != steer.ID || len(h.fake.Requests()) != 0 {
		t.Fatalf("the steer must stay parked: %+v, %d requests", q, len(h.fake.Requests()))
	}
	// The next wake runs it, in the same first step as the waking prompt.
	wake := h.followup("try again")
	h.idle()
	ends = h.turnEnds()
	if len(ends) != 2 || ends[1].Kind != session.ReasonCompleted {
		t.Fatalf("turn ends %+v", ends)
	}
	if got := enteredPrompts(h); !slices.Equal(got, []string{steer.ID, wake.ID}) {
		t.Fatalf("entered %v, want the parked steer, then the prompt", got)
	}
}

// Case 19: a pre-step hook that enters nothing ends the turn completed with
// no step and no model call.
func TestCase19PreStepEntersNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, script())
	h.agent.Hooks().OnPreStep(func(ctx context.Context, p *driver.PreStepPayload, next func(context.Context) (driver.PreStepDecision, error)) (driver.PreStepDecision, error) {
		return driver.Enter(nil), nil
	})
	h.followup("dropped")
	h.idle()
	equal(t, "events", h.types(), []string{"agent/inbox/spliced", "turn/start", "agent/inbox/spliced", "turn/end"})
	if h.lastTurnEnd().Kind != session.ReasonCompleted || len(h.fake.Requests()) != 0 {
		t.Fatalf("%+v", h.lastTurnEnd())
	}
}

// Case 20: a turn-stopping hook that steers twice yields 3 steps and 3
// model calls in one turn.
func TestCase20TurnStoppingSteers(t *testing.T) {
	t.Parallel()
	h := newHarness(t, script(textReply("a"), textReply("b"), textReply("c")))
	var n atomic.Int32
	h.agent.Hooks().OnTurnStopping(func(ctx context.Context, p *driver.TurnStoppingPayload) error {
		if n.Add(1) <= 2 {
			return p.Agent.Steer(ctx, llm.UserText("keep going", llm.Source{Kind: llm.SourcePlugin, Plugin: "test"}))
		}
		return nil
	})
	h.followup("go")
	h.idle()
	if s := len(find[session.StepBoundary](h, session.TypeStepStart)); s != 3 || len(h.fake.Requests()) != 3 {
		t.Fatalf("%d steps, %d requests", s, len(h.fake.Requests()))
	}
	if len(h.turnEnds()) != 1 {
		t.Fatalf("turns %+v", h.turnEnds())
	}
}

// Case 21: a tool that concludes the turn stops it after its step; steering
// that arrives during that tool still runs a second step.
func TestCase21ConcludeTurn(t *testing.T) {
	t.Parallel()
	for _, steer := range []bool{false, true} {
		t.Run(fmt.Sprintf("steer=%v", steer), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, script(toolReply(call("c1", "finish", map[string]any{})), textReply("after steer")))
			var a *driver.Agent
			err := h.agent.Tools().Register(tools.Definition{
				Name: "finish", Description: "ends the turn", Parameters: json.RawMessage(`{"type":"object"}`), Access: tools.AccessRead,
				Execute: func(ctx context.Context, c *tools.Call) (tools.Result, error) {
					if steer {
						if err := a.Steer(ctx, userMsg("one more thing")); err != nil {
							return tools.Result{}, err
						}
					}
					c.ConcludeTurn()
					return tools.TextResult("finished"), nil
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			a = h.agent
			h.followup("wrap up")
			h.idle()
			want := 1
			if steer {
				want = 2
			}
			if n := len(h.fake.Requests()); n != want {
				t.Fatalf("%d model calls, want %d\n%s", n, want, h.dump())
			}
			if len(find[session.ToolResult](h, session.TypeToolResult)) != 1 || h.lastTurnEnd().Kind != session.ReasonCompleted {
				t.Fatal(h.dump())
			}
		})
	}
}

// Case 22: max-tokens is sticky within a turn and does not leak into the
// next one.
func TestCase22MaxTokensSticky(t *testing.T) {
	t.Parallel()
	cut := fake.Reply{Text: "a long answer that got cut", Chunks: 10, Delay: 10 * time.Millisecond, Finish: "length"}
	h := newHarness(t, script(cut, textReply("steered step"), textReply("next turn")))
	h.followup("write a lot")
	h.waitEvent(isType(session.TypeAssistantChunk))
	if err := h.agent.Steer(h.ctx, userMsg("and summarize")); err != nil {
		t.Fatal(err)
	}
	h.idle()
	if got := h.lastTurnEnd(); got.Kind != session.ReasonMaxTokens {
		t.Fatalf("turn 1 ended %+v, want max-tokens\n%s", got, h.dump())
	}
	if len(find[session.StepBoundary](h, session.TypeStepStart)) != 2 {
		t.Fatalf("want 2 steps\n%s", h.dump())
	}
	h.followup("again")
	h.idle()
	if got := h.lastTurnEnd(); got.Kind != session.ReasonCompleted {
		t.Fatalf("turn 2 ended %+v", got)
	}
}

// Case 23: a max-tokens response with text and a tool call keeps the text
// and never runs the tool.
func TestCase23MaxTokensDropsToolCalls(t *testing.T) {
	t.Parallel()
	r := fake.Reply{Text: "I will write", ToolCalls: []fake.ToolCall{call("c1", "write", map[string]any{"file_path": "x", "content": "y"})}, Finish: "length"}
	h := newHarness(t, script(r))
	h.followup("go")
	h.idle()
	msg := find[session.AssistantMessage](h, session.TypeAssistantMessage)[0].Message
	if len(msg.Content) != 1 || msg.Content[0].Type != llm.BlockText || msg.Text() != "I will write" {
		t.Fatalf("message %+v", msg)
	}
	if len(find[session.ToolCall](h, session.TypeToolCall)) != 0 || h.lastTurnEnd().Kind != session.ReasonMaxTokens {
		t.Fatal(h.dump())
	}
	if _, err := os.Stat(filepath.Join(h.ws, "x")); err == nil {
		t.Fatal("the dropped tool call ran")
	}
}

// Case 24: a provider that sends only finish{stop} yields an empty
// assistant message citing that chunk; history keeps only the user message.
// Also a max-tokens reply that holds only a tool call: empty content, the
// tool never runs.
func TestCase24EmptyResponses(t *testing.T) {
	t.Parallel()
	t.Run("bare finish", func(t *testing.T) {
		t.Parallel()
		p := &chunkProvider{name: "bare", plan: []providerCall{{chunks: []llm.Chunk{llm.Finish(llm.FinishStop, nil)}}}}
		h := newHarness(t, script(), withProvider(p))
		h.followup("hi")
		h.idle()
		ev := h.waitEvent(isType(session.TypeAssistantMessage))
		am, _ := session.Decode[session.AssistantMessage](ev)
		chunk := h.waitEvent(isType(session.TypeAssistantChunk))
		if len(am.Message.Content) != 0 || am.Usage != nil || !slices.Equal(ev.SourceEventSeqs, []int64{chunk.Seq}) {
			t.Fatalf("message %+v sources %v", am, ev.SourceEventSeqs)
		}
		equal(t, "derived", derivedRoles(h.agent.Log().DeriveMessages()), []string{"user:text", "user:runtime-context"})
		if h.lastTurnEnd().Kind != session.ReasonCompleted {
			t.Fatal(h.dump())
		}
	})
	t.Run("max-tokens tool call only", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, script(fake.Reply{ToolCalls: []fake.ToolCall{call("c1", "bash", map[string]any{"command": "touch ran", "description": "x"})}, Finish: "length"}))
		h.followup("go")
		h.idle()
		am := find[session.AssistantMessage](h, session.TypeAssistantMessage)[0]
		if len(am.Message.Content) != 0 || len(find[session.ToolCall](h, session.TypeToolCall)) != 0 || h.lastTurnEnd().Kind != session.ReasonMaxTokens {
			t.Fatal(h.dump())
		}
	})
}

// Case 25: an agent/request hook that changes the model logs a change
// header and the request uses the new model.
func TestCase25RequestHookChangesModel(t *testing.T) {
	t.Parallel()
	h := newHarness(t, script(textReply("one"), textReply("two")))
	h.followup("first")
	h.idle()
	h.agent.Hooks().OnRequest(func(ctx context.Context, p *driver.RequestPayload, next func(context.Context) (llm.CallConfig, error)) (llm.CallConfig, error) {
		cfg, err := next(ctx)
		cfg.Model = "fake-model-large"
		return cfg, err
	})
	h.followup("second")
	h.idle()
	hdrs := find[session.RequestHeader](h, session.TypeRequestHeader)
	if len(hdrs) != 2 || hdrs[0].Reason != session.HeaderInitial || hdrs[1].Reason != session.HeaderChange || hdrs[1].Header.Config.Model != "fake-model-large" {
		t.Fatalf("headers %+v", hdrs)
	}
	if got := h.fake.Requests()[1].Model(); got != "fake-model-large" {
		t.Fatalf("request model %q", got)
	}
}

// Case 26: no provider/model at all ends the turn in error naming it, with
// no request sent.
func TestCase26NoProvider(t *testing.T) {
	t.Parallel()
	h := newHarness(t, script(textReply("never")))
	h.agent.Hooks().OnRequest(func(ctx context.Context, p *driver.RequestPayload, next func(context.Context) (llm.CallConfig, error)) (llm.CallConfig, error) {
		return llm.CallConfig{}, nil
	})
	h.followup("hi")
	h.idle()
	end := h.lastTurnEnd()
	if end.Kind != session.ReasonError || end.Error.Code != llm.CodeNoProvider || !strings.Contains(end.Error.Message, "provider/model") {
		t.Fatalf("end %+v", end)
	}
	if len(h.fake.Requests()) != 0 {
		t.Fatal("a request was sent")
	}
}

// Case 27: an unchanged system prompt logs one header across turns; a
// changed section logs a change snapshot.
func TestCase27HeaderOnlyOnChange(t *testing.T) {
	t.Parallel()
	h := newHarness(t, script(textReply("1"), textReply("2"), textReply("3")))
	var persona atomic.Value
	persona.Store("Be brief.")
	h.agent.Hooks().OnAssemble(func(ctx context.Context, _ *driver.Assembly, next func(context.Context) (*driver.Assembly, error)) (*driver.Assembly, error) {
		a, err := next(ctx)
		if err == nil {
			a.Sections = append(a.Sections, driver.Section{Name: "test:persona", Order: 0, Text: persona.Load().(string)})
		}
		return a, err
	})
	h.followup("a")
	h.idle()
	h.followup("b")
	h.idle()
	if n := len(find[session.RequestHeader](h, session.TypeRequestHeader)); n != 1 {
		t.Fatalf("%d headers after two identical turns", n)
	}
	persona.Store("Be thorough.")
	h.followup("c")
	h.idle()
	hdrs := find[session.RequestHeader](h, session.TypeRequestHeader)
	if len(hdrs) != 2 || hdrs[1].Reason != session.HeaderChange || !strings.Contains(hdrs[1].Header.System, "Be thorough.") {
		t.Fatalf("headers %+v", hdrs)
	}
	sys := h.fake.Requests()[2].Messages()[0]
	if sys.Role != "system" || !strings.Contains(sys.Text(), "Be thorough.") {
		t.Fatalf("system message %+v", sys)
	}
}

// Case 28: runtime context snapshots are sent only when the context changes:
// one snapshot, none while unchanged, a new one after a change; when the
// contexts are removed one "none" message, and nothing while still none.
// The system prompt never changes with them.
func TestCase28RuntimeContextSnapshots(t *testing.T) {
	t.Parallel()
	h := newHarness(t, script(textReply("1"), textReply("2"), textReply("3"), textReply("4"), textReply("5")))
	var noContexts atomic.Bool
	h.agent.Hooks().OnAssemble(func(ctx context.Context, _ *driver.Assembly, next func(context.Context) (*driver.Assembly, error)) (*driver.Assembly, error) {
		a, err := next(ctx)
		if err == nil && noContexts.Load() {
			a.Contexts = nil
		}
		return a, err
	})
	snapshots := func() []string {
		var out []string
		for _, m := range find[llm.Message](h, session.TypeUserMessage) {
			if m.Source.Plugin == llm.PluginRuntimeContext {
				out = append(out, m.Text())
			}
		}
		return out
	}
	h.followup("a")
	h.idle()
	h.followup("b")
	h.idle()
	if n := len(snapshots()); n != 1 {
		t.Fatalf("%d snapshots after two turns with the same mode", n)
	}
	if err := h.agent.SetMode(h.ctx, session.ModeAuto, nil); err != nil {
		t.Fatal(err)
	}
	h.followup("c")
	h.idle()
	snaps := snapshots()
	if len(snaps) != 2 || !strings.HasPrefix(snaps[1], driver.SnapshotPreamble+"\n\n") || !strings.Contains(snaps[1], "Permission mode: auto") {
		t.Fatalf("snapshots after a mode change %q", snaps)
	}
	noContexts.Store(true)
	h.followup("d")
	h.idle()
	snaps = snapshots()
	if len(snaps) != 3 || snaps[2] != driver.NoContextText {
		t.Fatalf("after the contexts went: %q", snaps)
	}
	h.followup("e")
	h.idle()
	if n := len(snapshots()); n != 3 {
		t.Fatalf("%d snapshots: still none must send nothing", n)
	}
	reqs := h.fake.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d requests", len(reqs))
	}
	for _, r := range reqs[1:] {
		if r.Messages()[0].Text() != reqs[0].Messages()[0].Text() {
			t.Fatal("the system prompt changed with the runtime context")
		}
	}
}

// Case 29: a section variable without a value fails the turn after
// step/start with no request and an agent/error; once a hook supplies it
// the prompt renders, with exactly the sections in order.
func TestCase29SectionVariable(t *testing.T) {
	t.Parallel()
	h := newHarness(t, script(textReply("ok")))
	var place atomic.Value
	place.Store("")
	h.agent.Hooks().OnAssemble(func(ctx context.Context, _ *driver.Assembly, next func(context.Context) (*driver.Assembly, error)) (*driver.Assembly, error) {
		a, err := next(ctx)
		if err == nil {
			a.Sections = append(a.Sections, driver.Section{Name: "test:where", Order: 1, Text: "In {{place}}."})
			if p := place.Load().(string); p != "" {
				a.Vars["place"] = p
			}
		}
		return a, err
	})
	h.followup("hi")
	h.idle()
	end := h.lastTurnEnd()
	if end.Kind != session.ReasonError || end.Error.Code != driver.CodePrompt || !strings.Contains(end.Error.Message, "{{place}}") || !strings.Contains(end.Error.Message, "test:where") {
		t.Fatalf("end %+v", end)
	}
	if len(find[session.StepBoundary](h, session.TypeStepStart)) != 1 || len(h.fake.Requests()) != 0 {
		t.Fatalf("want a step and no request\n%s", h.dump())
	}
	errs := h.live.kinds(driver.LiveError)
	if len(errs) != 1 || errs[0].Turn != 1 || errs[0].Error.Code != driver.CodePrompt || errs[0].Error.Message != end.Error.Message {
		t.Fatalf("agent/error notifications %+v", errs)
	}
	place.Store("/x")
	h.followup("again")
	h.idle()
	if h.lastTurnEnd().Kind != session.ReasonCompleted {
		t.Fatal(h.dump())
	}
	identity := strings.NewReplacer("{{cwd}}", h.ws, "{{provider}}", "fake", "{{model}}", "fake-model").Replace(driver.IdentityText)
	want := identity + "\n\nIn /x.\n\n" + driver.ToolGuidanceText
	if sys := h.fake.Requests()[0].Messages()[0].Text(); sys != want {
		t.Fatalf("system prompt\n got  %q\n want %q", sys, want)
	}
	if hdr, _ := h.agent.Log().RequestHeader(); hdr.System != want {
		t.Fatalf("logged system %q", hdr.System)
	}
}

// Case 30: every request equals what the log reconstructs. The manager runs
// with VerifyRequests (each request re-derived from a fresh load of the raw
// log); here the HTTP bodies the model server received are also compared
// with a reconstruction from the stored log.
func TestCase30RequestsEqualTheLog(t *testing.T) {
	t.Parallel()
	h := newHarness(t, script(
		toolReply(call("c1", "read", map[string]any{"file_path": "a.txt"})),
		textReply("read it"),
		textReply("second turn"),
	))
	writeFile(t, h.ws, "a.txt", "alpha\n")
	h.followup("read a.txt")
	h.idle()
	h.followup("thanks")
	h.idle()
	reqs := h.fake.Requests()
	// Reconstruct each request's message list from the log prefix before the
	// attempt's first chunk.
	evs := h.events()
	var prefixes []int
	for i, ev := range evs {
		if ev.Type == session.TypeAssistantChunk && evs[i-1].Type != session.TypeAssistantChunk {
			prefixes = append(prefixes, i)
		}
	}
	if len(prefixes) != len(reqs) {
		t.Fatalf("%d attempts in the log, %d requests received", len(prefixes), len(reqs))
	}
	for k, n := range prefixes {
		l, err := session.Load(h.agent.Log().Header(), evs[:n], session.Options{})
		if err != nil {
			t.Fatal(err)
		}
		want := l.DeriveMessages()
		got := reqs[k].Messages()
		hdr, _ := l.RequestHeader()
		if got[0].Role != "system" || got[0].Text() != hdr.System {
			t.Fatalf("request %d: system prompt differs from the logged header", k)
		}
		if wire := wireCount(want); wire != len(got)-1 {
			t.Fatalf("request %d: %d wire messages, log derives %d", k, len(got)-1, wire)
		}
		if len(reqs[k].Body["tools"].([]any)) != len(hdr.Tools) {
			t.Fatalf("request %d: tools differ from the logged header", k)
		}
	}
}

// wireCount is how many chat messages a derived history serializes to: one
// per user/assistant message, plus one per extra tool result block.
func wireCount(msgs []llm.Message) int {
	n := 0
	for _, m := range msgs {
		results := 0
		hasText := false
		for _, b := range m.Content {
			if b.Type == llm.BlockToolResult {
				results++
			} else {
				hasText = true
			}
		}
		if results == 0 || hasText {
			n++
		}
		n += results
	}
	return n
}

func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
