package driver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"harness/internal/driver"
	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/session"
	"harness/internal/tools"
)

// requestHasToolResult reports whether request i (0-based) of the fake
// model carries a tool message whose text contains want.
func requestHasToolResult(h *harness, i int, want string) bool {
	reqs := h.fake.Requests()
	if i >= len(reqs) {
		return false
	}
	for _, m := range reqs[i].Messages() {
		if m.Role == "tool" && strings.Contains(m.Text(), want) {
			return true
		}
	}
	return false
}

// A steered step that calls tools owes the model another request: the end
// reason is reset after every step (upstream §3.2 g), so a tools step clears
// the "completed" of the step before it and a continuation step runs. The
// same holds when the steer comes from a turn-stopping hook, and after a
// concluding tool followed by a steer.
func TestSteeredToolStepContinues(t *testing.T) {
	t.Parallel()
	readCall := call("r1", "read", map[string]any{"file_path": "a.txt"})
	check := func(t *testing.T, h *harness) {
		t.Helper()
		h.idle()
		if n := len(h.fake.Requests()); n != 3 {
			t.Fatalf("%d model calls, want 3 (the tool result must reach the model)\n%s", n, h.dump())
		}
		if n := len(find[session.StepBoundary](h, session.TypeStepStart)); n != 3 {
			t.Fatalf("%d steps, want 3\n%s", n, h.dump())
		}
		if !requestHasToolResult(h, 2, "alpha") {
			t.Fatalf("the third request does not carry the read result\n%s", h.dump())
		}
		if ends := h.turnEnds(); len(ends) != 1 || ends[0].Kind != session.ReasonCompleted {
			t.Fatalf("turn ends %+v", ends)
		}
	}

	t.Run("steer during a text step", func(t *testing.T) {
		t.Parallel()
		slow := fake.Reply{Text: "first answer in many pieces", Chunks: 20, Delay: 20 * time.Millisecond}
		h := newHarness(t, script(slow, toolReply(readCall), textReply("the file says alpha")))
		writeFile(t, h.ws, "a.txt", "alpha\n")
		h.followup("hello")
		h.waitEvent(isType(session.TypeAssistantChunk))
		if err := h.agent.Steer(h.ctx, userMsg("now read a.txt")); err != nil {
			t.Fatal(err)
		}
		check(t, h)
	})

	t.Run("steer from turn-stopping", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, script(textReply("done"), toolReply(readCall), textReply("the file says alpha")))
		writeFile(t, h.ws, "a.txt", "alpha\n")
		var n atomic.Int32
		h.agent.Hooks().OnTurnStopping(func(ctx context.Context, p *driver.TurnStoppingPayload) error {
			if n.Add(1) == 1 {
				return p.Agent.Steer(ctx, llm.UserText("check a.txt", llm.Source{Kind: llm.SourcePlugin, Plugin: "test"}))
			}
			return nil
		})
		h.followup("go")
		check(t, h)
	})

	t.Run("steer after a concluding tool", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, script(toolReply(call("c1", "finish", map[string]any{})), toolReply(readCall), textReply("the file says alpha")))
		writeFile(t, h.ws, "a.txt", "alpha\n")
		var a *driver.Agent
		err := h.agent.Tools().Register(tools.Definition{
			Name: "finish", Description: "ends the turn", Parameters: json.RawMessage(`{"type":"object"}`), Access: tools.AccessRead,
			Execute: func(ctx context.Context, c *tools.Call) (tools.Result, error) {
				if err := a.Steer(ctx, userMsg("one more: read a.txt")); err != nil {
					return tools.Result{}, err
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
		check(t, h)
	})
}

// A send from a synchronous log subscriber cannot deadlock the agent: the
// log delivers events appended under the agent's lock only after the lock
// is released (cases 8/8b). The nested send is accepted and queued after
// the outer prompt, which runs first (docs/lifecycle.md "Sends from log
// subscribers").
func TestSendFromLogSubscriber(t *testing.T) {
	t.Parallel()
	h := newHarness(t, script(textReply("outer ran"), textReply("nested ran"), textReply("steer ran")))
	outer, nested := userMsg("outer"), userMsg("nested")
	var nestedErr, steerErr error
	var nestedOnce, steerOnce atomic.Bool
	_, cancel := h.agent.Log().Subscribe(func(ev session.Event) {
		switch ev.Type {
		case session.TypeInboxSpliced:
			sp, _ := session.Decode[session.InboxSpliced](ev)
			if len(sp.Inserted) == 1 && sp.Inserted[0].ID == outer.ID && nestedOnce.CompareAndSwap(false, true) {
				nestedErr = h.agent.Followup(h.ctx, nested)
			}
		case session.TypeAssistantMessage:
			// The driver goroutine's own events: a Steer from here works too.
			if steerOnce.CompareAndSwap(false, true) {
				steerErr = h.agent.Steer(h.ctx, userMsg("steered from an observer"))
			}
		}
	})
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- h.agent.Followup(h.ctx, outer) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		// Not t.Fatal or panic: the cleanup would wait on the deadlocked
		// agent forever.
		fmt.Fprintln(os.Stderr, "FAIL: TestSendFromLogSubscriber: Followup deadlocked: a log subscriber called back into the agent")
		os.Exit(1)
	}
	h.idle()
	if nestedErr != nil || steerErr != nil {
		t.Fatalf("nested followup: %v, steer: %v", nestedErr, steerErr)
	}
	// The outer prompt runs first and the nested one after it, in a turn
	// of its own. Where the observer's steer lands depends on when the
	// delivery after the lock runs (the goroutine delivering may be the
	// outer send's, which waits for the store before it wakes the driver):
	// the outer turn's next step, the nested turn, or a turn of its own
	// once the nested one ended.
	turns := find[session.TurnStart](h, session.TypeTurnStart)
	if len(turns) < 2 || len(turns) > 3 || len(h.fake.Requests()) != 3 {
		t.Fatalf("%d turns, %d requests\n%s", len(turns), len(h.fake.Requests()), h.dump())
	}
	got := enteredPrompts(h)
	if len(got) != 3 || got[0] != outer.ID || !slices.Contains(got[1:], nested.ID) {
		t.Fatalf("entered %v: the outer prompt runs first, then the nested one and the steer", got)
	}
}

// Stop leaves the queue paused: RunNext starts it (one turn per queued
// prompt, the steering items with the first), ClearQueue empties it
// durably; RunNext refuses a running agent and an empty queue.
func TestRunNextAndClearQueue(t *testing.T) {
	t.Parallel()
	t.Run("run next", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, script(stallAfter(fake.Frame{Text: "working"}), textReply("one"), textReply("two")))
		h.followup("long job")
		waitChunk(h, llm.ChunkTextDelta)
		if err := h.agent.RunNext(h.ctx); !errors.Is(err, driver.ErrBusy) {
			t.Fatalf("RunNext while running: %v", err)
		}
		one, two := h.followup("queued one"), h.followup("queued two")
		h.agent.Cancel(userCancel, true)
		h.idle()
		if q := h.agent.Queue(); len(q.Queued) != 2 {
			t.Fatalf("queue after Stop %+v", q)
		}
		if err := h.agent.RunNext(h.ctx); err != nil {
			t.Fatal(err)
		}
		h.idle()
		if got := enteredPrompts(h); !slices.Equal(got[1:], []string{one.ID, two.ID}) {
			t.Fatalf("entered %v", got)
		}
		if ends := h.turnEnds(); len(ends) != 3 || ends[2].Kind != session.ReasonCompleted {
			t.Fatalf("ends %+v", ends)
		}
		if err := h.agent.RunNext(h.ctx); !errors.Is(err, driver.ErrItemNotFound) {
			t.Fatalf("RunNext on an empty queue: %v", err)
		}
	})
	t.Run("run next while the stopped turn winds down", func(t *testing.T) {
		t.Parallel()
		h, release := latchHarness(t, userCancel)
		queued := h.followup("queued before")
		// The followup above latched (sent while aborting); RunNext while
		// aborting latches too and answers at once.
		if err := h.agent.RunNext(h.ctx); err != nil {
			t.Fatal(err)
		}
		close(release)
		h.idle()
		if got := enteredPrompts(h); len(got) != 1 || got[0] != queued.ID {
			t.Fatalf("entered %v", got)
		}
	})
	t.Run("clear", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, script(stallAfter(fake.Frame{Text: "working"})))
		h.followup("long job")
		waitChunk(h, llm.ChunkTextDelta)
		h.followup("queued one")
		if err := h.agent.Steer(h.ctx, userMsg("a steer")); err != nil {
			t.Fatal(err)
		}
		h.agent.Cancel(userCancel, true)
		h.idle()
		if err := h.agent.ClearQueue(h.ctx); err != nil {
			t.Fatal(err)
		}
		if q := h.agent.Queue(); len(q.Queued)+len(q.Steering) != 0 {
			t.Fatalf("queue after Clear %+v", q)
		}
		var canceled int
		for _, sp := range find[session.InboxSpliced](h, session.TypeInboxSpliced) {
			if sp.Outcome == session.OutcomeCanceled {
				canceled += sp.RemovedCount
			}
		}
		if canceled != 2 || len(h.live.kinds(driver.LiveDiscarded)) != 2 {
			t.Fatalf("%d canceled", canceled)
		}
		n := h.agent.Log().Len()
		if err := h.agent.ClearQueue(h.ctx); err != nil || h.agent.Log().Len() != n {
			t.Fatalf("clearing an empty queue: %v, logged %d events", err, h.agent.Log().Len()-n)
		}
		h.check(h.agent)
	})
}

// A paused queue survives a restart paused: Resume does not start it.
func TestRestartKeepsPausedQueue(t *testing.T) {
	t.Parallel()
	h := newHarness(t, script(stallAfter(fake.Frame{Text: "long"}), textReply("ran after the wake")))
	h.followup("long job")
	waitChunk(h, llm.ChunkTextDelta)
	queued := h.followup("paused by the stop")
	h.agent.Cancel(userCancel, true)
	h.idle()
	h.restart()
	if err := h.mgr.Resume(h.ctx); err != nil {
		t.Fatal(err)
	}
	a, err := h.mgr.Get(h.ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	h.agent = a
	h.idle()
	if q := a.Queue(); len(q.Queued) != 1 || q.Queued[0].ID != queued.ID || a.Status() != driver.StatusIdle || len(h.turnEnds()) != 1 {
		t.Fatalf("after a restart the paused queue ran or went: %+v\n%s", q, h.dump())
	}
	if err := a.RunNext(h.ctx); err != nil {
		t.Fatal(err)
	}
	h.idle()
	if ends := h.turnEnds(); len(ends) != 2 || ends[1].Kind != session.ReasonCompleted {
		t.Fatalf("ends %+v", ends)
	}
}

// The runtime-context snapshot is offered at every step, so a step whose
// claimed input a pre-step hook dropped still runs when the context
// changed, entering only the snapshot (upstream §3.2 a); unchanged, no step.
func TestSnapshotOnlyStep(t *testing.T) {
	t.Parallel()
	h := newHarness(t, script(textReply("first"), textReply("saw the new mode")))
	var drop atomic.Bool
	h.agent.Hooks().OnPreStep(func(ctx context.Context, p *driver.PreStepPayload, next func(context.Context) (driver.PreStepDecision, error)) (driver.PreStepDecision, error) {
		if drop.Load() {
			p.Messages = nil
		}
		return next(ctx)
	})
	h.followup("hello")
	h.idle()
	drop.Store(true)
	h.followup("dropped, context unchanged")
	h.idle()
	if n := len(find[session.StepBoundary](h, session.TypeStepStart)); n != 1 || len(h.fake.Requests()) != 1 || h.lastTurnEnd().Kind != session.ReasonCompleted {
		t.Fatalf("an unchanged context made a step: %d steps\n%s", n, h.dump())
	}
	if err := h.agent.SetMode(h.ctx, session.ModeAuto, nil); err != nil {
		t.Fatal(err)
	}
	h.followup("dropped, context changed")
	h.idle()
	if n := len(find[session.StepBoundary](h, session.TypeStepStart)); n != 2 || len(h.fake.Requests()) != 2 {
		t.Fatalf("%d steps, %d requests, want a snapshot-only step\n%s", n, len(h.fake.Requests()), h.dump())
	}
	msgs := find[llm.Message](h, session.TypeUserMessage)
	last := msgs[len(msgs)-1]
	if last.Source.Plugin != llm.PluginRuntimeContext || !strings.Contains(last.Text(), "Permission mode: auto") || len(enteredPrompts(h)) != 1 {
		t.Fatalf("the step entered %q", last.Text())
	}
}

// Every pre-step is a flush checkpoint: when agent/pre-step runs, the
// stored log already holds everything before it (here the previous step's
// tool result and step/end).
func TestPreStepFlushCheckpoint(t *testing.T) {
	t.Parallel()
	h := newHarness(t, script(toolReply(call("r1", "read", map[string]any{"file_path": "a.txt"})), textReply("read")))
	writeFile(t, h.ws, "a.txt", "alpha\n")
	var misses atomic.Int32
	var checked atomic.Int32
	h.agent.Hooks().OnPreStep(func(ctx context.Context, p *driver.PreStepPayload, next func(context.Context) (driver.PreStepDecision, error)) (driver.PreStepDecision, error) {
		checked.Add(1)
		stored, err := h.store.EventsSince(ctx, p.Agent.ID(), -1, 0)
		if err != nil || int64(len(stored)) != p.Agent.Log().Len() {
			misses.Add(1)
		}
		return next(ctx)
	})
	h.followup("read a.txt")
	h.idle()
	if checked.Load() != 2 || misses.Load() != 0 {
		t.Fatalf("%d pre-steps, %d saw a log that was not durable", checked.Load(), misses.Load())
	}
}

// The retry budget is counted per (turn, step, provider, policy key) from
// the llm/retry events in the log: a retry granted by another recovery (as
// overflow compaction grants one) does not spend it. Each llm/retry records
// its mode and policy key.
func TestRetryBudgetFromLog(t *testing.T) {
	t.Parallel()
	down := fake.Reply{Error: &fake.HTTPError{Status: 503, Message: "down"}}
	replies := []fake.Reply{down, {Error: &fake.HTTPError{Status: 401, Message: "recoverable"}}}
	for range 5 {
		replies = append(replies, down)
	}
	h := newHarness(t, script(replies...))
	var granted atomic.Int32
	h.agent.Hooks().OnRequestError(func(ctx context.Context, p *driver.RequestErrorPayload, next func(context.Context) (driver.RequestErrorDecision, error)) (driver.RequestErrorDecision, error) {
		if p.Failure.Code == llm.CodeAuth {
			granted.Add(1)
			return driver.RequestErrorDecision{Retry: true}, nil
		}
		return next(ctx)
	})
	h.followup("hi")
	h.idle()
	retries := find[session.LLMRetry](h, session.TypeLLMRetry)
	if len(retries) != 5 || granted.Load() != 1 {
		t.Fatalf("%d llm/retry events, %d granted by the hook; want 5 and 1\n%s", len(retries), granted.Load(), h.dump())
	}
	for i, r := range retries {
		if r.Retry != i+1 || r.Mode != "normal" || r.PolicyKey != "normal" || r.MaxRetries != 5 || r.Provider != "fake" || r.Turn != 1 || r.Step != 1 {
			t.Fatalf("retry %d: %+v", i, r)
		}
	}
	end := h.lastTurnEnd()
	if end.Kind != session.ReasonError || end.Error.Code != llm.CodeServer || len(h.fake.Requests()) != 7 {
		t.Fatalf("end %+v, %d requests", end, len(h.fake.Requests()))
	}
}

// The always mode retries every failure, past MaxRetries, and records mode
// and policy key (no maxRetries).
func TestRetryAlwaysMode(t *testing.T) {
	t.Parallel()
	p := fastRetry()
	p.Mode, p.MaxRetries, p.Key = llm.RetryAlways, 1, "always-fast"
	h := newHarness(t, script(
		fake.Reply{Error: &fake.HTTPError{Status: 401, Message: "not retryable in normal mode"}},
		fake.Reply{Error: &fake.HTTPError{Status: 503, Message: "down"}},
		fake.Reply{Error: &fake.HTTPError{Status: 503, Message: "down"}},
		textReply("made it"),
	), withRetry(p))
	h.followup("hi")
	h.idle()
	retries := find[session.LLMRetry](h, session.TypeLLMRetry)
	if len(retries) != 3 || h.lastTurnEnd().Kind != session.ReasonCompleted {
		t.Fatalf("%d retries, end %+v\n%s", len(retries), h.lastTurnEnd(), h.dump())
	}
	for i, r := range retries {
		if r.Retry != i+1 || r.Mode != "always" || r.PolicyKey != "always-fast" || r.MaxRetries != 0 {
			t.Fatalf("retry %d: %+v", i, r)
		}
	}
}

// Max-tokens stays the turn's reason once a step hit it, but a later step
// whose tools owe the model a request still gets its continuation step
// (docs/lifecycle.md "Max-tokens and owed tool results").
func TestMaxTokensThenSteeredToolStepContinues(t *testing.T) {
	t.Parallel()
	cut := fake.Reply{Text: "a long answer that got cut", Chunks: 10, Delay: 10 * time.Millisecond, Finish: "length"}
	h := newHarness(t, script(cut, toolReply(call("r1", "read", map[string]any{"file_path": "a.txt"})), textReply("alpha")))
	writeFile(t, h.ws, "a.txt", "alpha\n")
	h.followup("write a lot")
	h.waitEvent(isType(session.TypeAssistantChunk))
	if err := h.agent.Steer(h.ctx, userMsg("read a.txt instead")); err != nil {
		t.Fatal(err)
	}
	h.idle()
	if n := len(h.fake.Requests()); n != 3 || !requestHasToolResult(h, 2, "alpha") {
		t.Fatalf("%d requests; the read result must reach the model\n%s", n, h.dump())
	}
	if end := h.lastTurnEnd(); end.Kind != session.ReasonMaxTokens {
		t.Fatalf("turn ended %+v, want max-tokens (sticky)", end)
	}
}

// Case 51 (driver part): under the approval policy "never" a call that asks
// is rejected without asking anyone, with the audit pair asked +
// decided{rejected}; with no approval service it is denied as unavailable
// and no approval event is logged.
func TestCase51ApprovalPolicyAndNoService(t *testing.T) {
	t.Parallel()
	writeCall := call("c1", "write", map[string]any{"file_path": "out.txt", "content": "hello"})
	t.Run("never", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, script(toolReply(writeCall), textReply("ok")))
		if _, err := h.agent.Log().Append(session.TypeApprovalPolicy, session.ApprovalPolicy{Policy: session.ApprovalPolicyNever}); err != nil {
			t.Fatal(err)
		}
		h.followup("write it")
		h.idle()
		asked := find[session.ApprovalAsked](h, session.TypeApprovalAsked)
		decided := find[session.ApprovalDecided](h, session.TypeApprovalDecided)
		if len(asked) != 1 || len(decided) != 1 || decided[0].ID != asked[0].ID || decided[0].Outcome != session.ApprovalRejected || decided[0].By != nil {
			t.Fatalf("asked %+v decided %+v", asked, decided)
		}
		if asked[0].CallID != "c1" || asked[0].ToolName != "write" {
			t.Fatalf("asked %+v", asked[0])
		}
		if fileExists(h.ws, "out.txt") || len(h.live.kinds(driver.LiveInteractionRequested)) != 0 || len(h.agent.PendingInteractions()) != 0 {
			t.Fatal("the call ran, or someone was asked")
		}
		if !strings.Contains(lastToolMessage(t, h).Text(), "rejected") {
			t.Fatalf("model saw %q", lastToolMessage(t, h).Text())
		}
	})
	t.Run("no approval service", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, script(toolReply(writeCall), textReply("ok")), withManager(func(o *driver.Options) { o.NoApprovals = true }))
		h.followup("write it")
		h.idle()
		for _, ev := range h.events() {
			if strings.HasPrefix(string(ev.Type), "approval/") {
				t.Fatalf("audit event %s with no approval service\n%s", ev.Type, h.dump())
			}
		}
		if fileExists(h.ws, "out.txt") || len(h.live.kinds(driver.LiveInteractionRequested)) != 0 {
			t.Fatal("the call ran, or someone was asked")
		}
		if !strings.Contains(lastToolMessage(t, h).Text(), "no approval channel") {
			t.Fatalf("model saw %q", lastToolMessage(t, h).Text())
		}
	})
}

// Every test docs/lifecycle.md names exists, so each recorded difference
// stays held by a test.
func TestLifecycleDocNamesTests(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "lifecycle.md"))
	if err != nil {
		t.Fatal(err)
	}
	names := regexp.MustCompile("`(Test[A-Za-z0-9_]+)`").FindAllStringSubmatch(string(doc), -1)
	if len(names) < 10 {
		t.Fatalf("docs/lifecycle.md names %d tests", len(names))
	}
	var sources strings.Builder
	root := filepath.Join("..", "..")
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, "_test.go") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sources.Write(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range names {
		if !strings.Contains(sources.String(), "func "+m[1]+"(") {
			t.Errorf("docs/lifecycle.md names %s, which does not exist", m[1])
		}
	}
	for _, heading := range []string{"## Stop, the paused queue and the wake latch", "## Sends from log subscribers", "## Max-tokens and owed tool results", "## Forks work in their own workspace"} {
		if !strings.Contains(string(doc), heading) {
			t.Errorf("docs/lifecycle.md lacks %q", heading)
		}
	}
}
