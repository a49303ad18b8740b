package tools

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"harness/internal/llm"
	"harness/internal/session"
)

func newPipeline(t *testing.T, defs ...Definition) *Pipeline {
	t.Helper()
	r := NewRegistry()
	for _, d := range defs {
		if err := r.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	return &Pipeline{Scope: r.NewScope(), Logger: slog.New(slog.DiscardHandler)}
}

// Case 42: two parallel-safe calls both start before either completes.
func TestParallelCallsOverlap(t *testing.T) {
	t.Parallel()
	var started sync.WaitGroup
	started.Add(2)
	both := make(chan struct{})
	go func() { started.Wait(); close(both) }()
	body := func(ctx context.Context, call *Call) (Result, error) {
		started.Done()
		select {
		case <-both:
			return TextResult("ok " + call.ID), nil
		case <-time.After(20 * time.Second):
			return Result{}, errors.New("the other call never started: bodies did not overlap")
		}
	}
	p := newPipeline(t, testTool("par", true, body))
	env := newFakeEnv(t.TempDir())
	sink := newFakeSink(env.rec)
	out, err := p.Run(context.Background(), []llm.ContentBlock{tc("c1", "par", "{}"), tc("c2", "par", "{}")}, 1, 1, env, sink)
	if err != nil || out.Aborted || out.Concluded {
		t.Fatalf("Run = %+v, %v", out, err)
	}
	assertTrace(t, env.rec.trace("call", "commit"), []string{"call:c1", "call:c2", "commit:c1", "commit:c2"})
	for id, r := range env.rec.commits() {
		if r.IsError || resultText(r) != "ok "+id {
			t.Fatalf("%s: %+v", id, r)
		}
	}
}

// Case 42: an exclusive call between two parallel calls makes three groups.
func TestExclusiveCallIsABarrier(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var events []string
	var inflight, maxInflight int32
	body := func(ctx context.Context, call *Call) (Result, error) {
		n := atomic.AddInt32(&inflight, 1)
		defer atomic.AddInt32(&inflight, -1)
		for {
			m := atomic.LoadInt32(&maxInflight)
			if n <= m || atomic.CompareAndSwapInt32(&maxInflight, m, n) {
				break
			}
		}
		mu.Lock()
		events = append(events, "body:"+call.ID)
		mu.Unlock()
		return TextResult(call.ID), nil
	}
	p := newPipeline(t, testTool("par", true, body), testTool("ex", false, body))
	env := newFakeEnv(t.TempDir())
	_, err := p.Run(context.Background(), []llm.ContentBlock{tc("c1", "par", ""), tc("c2", "ex", ""), tc("c3", "par", "")}, 1, 1, env, newFakeSink(env.rec))
	if err != nil {
		t.Fatal(err)
	}
	assertTrace(t, env.rec.trace("call", "commit"), []string{"call:c1", "commit:c1", "call:c2", "commit:c2", "call:c3", "commit:c3"})
	if maxInflight != 1 {
		t.Fatalf("max bodies in flight = %d, want 1", maxInflight)
	}
}

// Case 42: a parallel group stops filling when a result observer (post hook)
// makes the next call exclusive.
func TestGroupStopsWhenPostHookReclassifies(t *testing.T) {
	t.Parallel()
	var exclusive atomic.Bool
	release2 := make(chan struct{})
	var c2Running, overlap atomic.Bool
	reg := NewRegistry()
	reg.MustRegister(testTool("quick", true, okBody("quick")))
	reg.MustRegister(Definition{
		Name: "slow", Description: "d", Parameters: json.RawMessage(objectSchema), Access: AccessRead,
		ConcurrencySafe: func(json.RawMessage) bool { return true },
		Execute: func(ctx context.Context, call *Call) (Result, error) {
			c2Running.Store(true)
			defer c2Running.Store(false)
			<-release2
			return TextResult("slow"), nil
		},
	})
	reg.MustRegister(Definition{
		Name: "flip", Description: "d", Parameters: json.RawMessage(objectSchema), Access: AccessRead,
		ConcurrencySafe: func(json.RawMessage) bool { return !exclusive.Load() },
		Execute: func(ctx context.Context, call *Call) (Result, error) {
			if c2Running.Load() {
				overlap.Store(true)
			}
			return TextResult("flip"), nil
		},
	})
	p := &Pipeline{Scope: reg.NewScope(), MaxParallel: 2, Post: []PostHook{
		func(ctx context.Context, call *Call, r Result, next func(context.Context) PostDecision) PostDecision {
			if call.ID == "c1" {
				exclusive.Store(true)
			}
			return next(ctx)
		},
	}}
	env := newFakeEnv(t.TempDir())
	sink := newFakeSink(env.rec)
	sink.onCommit = func(call *Call, r Result) {
		if call.ID == "c1" {
			close(release2)
		}
	}
	_, err := p.Run(context.Background(), []llm.ContentBlock{tc("c1", "quick", ""), tc("c2", "slow", ""), tc("c3", "flip", "")}, 1, 1, env, sink)
	if err != nil {
		t.Fatal(err)
	}
	// c3 became exclusive after c1's post hook: it must wait for c2.
	assertTrace(t, env.rec.trace("call", "commit"), []string{"call:c1", "call:c2", "commit:c1", "commit:c2", "call:c3", "commit:c3"})
	if overlap.Load() {
		t.Fatal("c3 ran while c2 was running")
	}
}

// Case 43: MaxParallel 1 is fully serial.
func TestMaxParallelOneIsSerial(t *testing.T) {
	t.Parallel()
	var inflight, maxInflight atomic.Int32
	body := func(ctx context.Context, call *Call) (Result, error) {
		n := inflight.Add(1)
		defer inflight.Add(-1)
		if n > maxInflight.Load() {
			maxInflight.Store(n)
		}
		return TextResult(call.ID), nil
	}
	p := newPipeline(t, testTool("par", true, body))
	p.MaxParallel = 1
	env := newFakeEnv(t.TempDir())
	calls := []llm.ContentBlock{tc("c1", "par", ""), tc("c2", "par", ""), tc("c3", "par", ""), tc("c4", "par", "")}
	if _, err := p.Run(context.Background(), calls, 1, 1, env, newFakeSink(env.rec)); err != nil {
		t.Fatal(err)
	}
	assertTrace(t, env.rec.trace("call", "commit"), []string{"call:c1", "commit:c1", "call:c2", "commit:c2", "call:c3", "commit:c3", "call:c4", "commit:c4"})
	if maxInflight.Load() != 1 {
		t.Fatalf("max in flight %d", maxInflight.Load())
	}
}

// Case 43: cap N keeps at most N bodies in flight and replenishes the pool
// as bodies settle (rolling, not batch by batch).
func TestRollingPool(t *testing.T) {
	t.Parallel()
	const cap = 2
	var inflight atomic.Int32
	var violation atomic.Bool
	started := make(chan string, 10)
	release := map[string]chan struct{}{}
	for _, id := range []string{"c1", "c2", "c3", "c4", "c5"} {
		release[id] = make(chan struct{})
	}
	body := func(ctx context.Context, call *Call) (Result, error) {
		if inflight.Add(1) > cap {
			violation.Store(true)
		}
		started <- call.ID
		<-release[call.ID]
		inflight.Add(-1)
		return TextResult(call.ID), nil
	}
	p := newPipeline(t, testTool("par", true, body))
	p.MaxParallel = cap
	env := newFakeEnv(t.TempDir())
	calls := []llm.ContentBlock{tc("c1", "par", ""), tc("c2", "par", ""), tc("c3", "par", ""), tc("c4", "par", ""), tc("c5", "par", "")}
	done := make(chan error, 1)
	go func() {
		_, err := p.Run(context.Background(), calls, 1, 1, env, newFakeSink(env.rec))
		done <- err
	}()
	got := map[string]bool{waitFor(t, started, "c1"): true, waitFor(t, started, "c2"): true}
	if !got["c1"] || !got["c2"] {
		t.Fatalf("first two started: %v", got)
	}
	// Release c2 first: c3 must start while c1 is still running.
	close(release["c2"])
	if id := waitFor(t, started, "third start"); id != "c3" {
		t.Fatalf("third start = %s", id)
	}
	close(release["c1"])
	if id := waitFor(t, started, "fourth start"); id != "c4" {
		t.Fatalf("fourth start = %s", id)
	}
	close(release["c3"])
	if id := waitFor(t, started, "fifth start"); id != "c5" {
		t.Fatalf("fifth start = %s", id)
	}
	close(release["c4"])
	close(release["c5"])
	if err := waitFor(t, done, "Run"); err != nil {
		t.Fatal(err)
	}
	if violation.Load() {
		t.Fatalf("more than %d bodies in flight", cap)
	}
	commits := env.rec.trace("commit")
	assertTrace(t, commits, []string{"commit:c1", "commit:c2", "commit:c3", "commit:c4", "commit:c5"})
}

// Case 44: a later call settling first is still committed in model order.
func TestCommitsInModelOrder(t *testing.T) {
	t.Parallel()
	c2done := make(chan struct{})
	p := newPipeline(t, testTool("par", true, func(ctx context.Context, call *Call) (Result, error) {
		if call.ID == "c1" {
			<-c2done
		} else {
			defer close(c2done)
		}
		return TextResult(call.ID), nil
	}))
	env := newFakeEnv(t.TempDir())
	if _, err := p.Run(context.Background(), []llm.ContentBlock{tc("c1", "par", ""), tc("c2", "par", "")}, 1, 1, env, newFakeSink(env.rec)); err != nil {
		t.Fatal(err)
	}
	assertTrace(t, env.rec.trace("call", "commit"), []string{"call:c1", "call:c2", "commit:c1", "commit:c2"})
}

// Case 45: additional contexts travel with their results, in call order,
// deferred contexts first; the driver enters them after all results.
func TestAdditionalContexts(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, testTool("ctx", true, func(ctx context.Context, call *Call) (Result, error) {
		call.DeferContext(llm.UserText("deferred "+call.ID, llm.Source{Kind: llm.SourceTool, CallID: call.ID}))
		r := TextResult("ok")
		r.AdditionalContexts = []llm.Message{{Content: []llm.ContentBlock{llm.Text("body " + call.ID)}}}
		return r, nil
	}))
	p.Post = []PostHook{func(ctx context.Context, call *Call, r Result, next func(context.Context) PostDecision) PostDecision {
		d := next(ctx)
		d.AdditionalContexts = append(d.AdditionalContexts, llm.UserText("post "+call.ID, llm.Source{Kind: llm.SourcePlugin, Plugin: "test"}))
		return d
	}}
	env := newFakeEnv(t.TempDir())
	if _, err := p.Run(context.Background(), []llm.ContentBlock{tc("c1", "ctx", ""), tc("c2", "ctx", "")}, 1, 1, env, newFakeSink(env.rec)); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, rec := range env.rec.all() {
		if rec.Kind != "commit" {
			continue
		}
		for _, m := range rec.Result.AdditionalContexts {
			if m.ID == "" || m.Role != llm.RoleUser || m.Source.Kind == "" || m.Validate() != nil {
				t.Fatalf("context not normalized: %+v", m)
			}
			got = append(got, m.Text())
		}
	}
	want := "deferred c1,body c1,post c1,deferred c2,body c2,post c2"
	if strings.Join(got, ",") != want {
		t.Fatalf("contexts %q, want %q", strings.Join(got, ","), want)
	}
}

// Case 46: a pre-execute deny runs no body; the turn goes on.
// Case 46 (guards): a guard denies after an allow; guards cannot allow.
// Case 47: an unknown tool gives a coded error result; the turn goes on.
// Case 48: coded errors carry {name, code}; plain errors carry none.
// Case 49: "" arguments become {}; invalid JSON fails validation readably.
// Case 50: a definition timeout gives TOOL_TIMEOUT; the body is awaited.
// Case 51: ask → approval outcomes; only allowed-once runs the body, and
// each denial says why.
// Case 52: post-execute block turns the result into an error with the
// feedback and drops the body's contexts.
// Post accept may replace content and sees the result it decides on.
// Case 21: ConcludeTurn on a successful result concludes; on an error it
// does not.
// Case 39: pool cap 2, four parallel calls, cancel after two started, then
// release: calls and results c1..c4 in order, c3/c4 aborted before
// dispatch, c1/c2 aborted with their post contexts kept.
func TestCancelDrainsAndSynthesizes(t *testing.T) {
	t.Parallel()
	started := make(chan string, 4)
	release := make(chan struct{})
	var bodies atomic.Int32
	p := newPipeline(t, testTool("par", true, func(ctx context.Context, call *Call) (Result, error) {
		bodies.Add(1)
		started <- call.ID
		<-release // ignores ctx on purpose: it must be drained, not abandoned
		return TextResult("done " + call.ID), nil
	}))
	p.MaxParallel = 2
	p.Post = []PostHook{func(ctx context.Context, call *Call, r Result, next func(context.Context) PostDecision) PostDecision {
		d := next(ctx)
		d.AdditionalContexts = append(d.AdditionalContexts, llm.UserText("post "+call.ID, llm.Source{Kind: llm.SourcePlugin}))
		return d
	}}
	ctx, cancel := context.WithCancel(context.Background())
	env := newFakeEnv(t.TempDir())
	calls := []llm.ContentBlock{tc("c1", "par", ""), tc("c2", "par", ""), tc("c3", "par", ""), tc("c4", "par", "")}
	done := make(chan Outcome, 1)
	go func() {
		out, err := p.Run(ctx, calls, 1, 1, env, newFakeSink(env.rec))
		if err != nil {
			t.Error(err)
		}
		done <- out
	}()
	waitFor(t, started, "first start")
	waitFor(t, started, "second start")
	cancel()
	close(release)
	out := waitFor(t, done, "Run")
	if !out.Aborted {
		t.Fatal("not aborted")
	}
	if bodies.Load() != 2 {
		t.Fatalf("%d bodies ran", bodies.Load())
	}
	assertTrace(t, env.rec.trace("call", "commit"), []string{"call:c1", "call:c2", "commit:c1", "commit:c2", "call:c3", "commit:c3", "call:c4", "commit:c4"})
	c := env.rec.commits()
	for _, id := range []string{"c1", "c2"} {
		r := c[id]
		if !r.IsError || resultText(r) != "Error: tool call aborted" || errCode(r) != session.CodeToolAborted {
			t.Errorf("%s = %+v", id, r)
		}
		if len(r.AdditionalContexts) != 1 || r.AdditionalContexts[0].Text() != "post "+id {
			t.Errorf("%s contexts = %+v", id, r.AdditionalContexts)
		}
	}
	for _, id := range []string{"c3", "c4"} {
		r := c[id]
		if !r.IsError || resultText(r) != "Error: tool call aborted before dispatch" || *r.Error != (session.ToolError{Name: "AbortError", Code: "ABORTED_BEFORE_DISPATCH"}) {
			t.Errorf("%s = %+v", id, r)
		}
	}
	// The sink sees the step's ctx where it may stop waiting (starting the
	// aborted calls) and one that outlives the cancel where the outcome must
	// be recorded (every commit).
	for _, rec := range env.rec.all() {
		switch {
		case rec.Kind == "commit" && rec.CtxErr != nil:
			t.Errorf("commit %s with a done ctx: %v", rec.CallID, rec.CtxErr)
		case rec.Kind == "call" && (rec.CallID == "c3" || rec.CallID == "c4") && rec.CtxErr == nil:
			t.Errorf("aborted call %s started without the step's cancelled ctx", rec.CallID)
		}
	}
}

// Case 35: cancelled before the step's tools run: no body, synthetic pairs.
func TestCancelledBeforeRun(t *testing.T) {
	t.Parallel()
	var ran atomic.Bool
	p := newPipeline(t, testTool("t", false, func(ctx context.Context, call *Call) (Result, error) {
		ran.Store(true)
		return TextResult("x"), nil
	}))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	env := newFakeEnv(t.TempDir())
	out, err := p.Run(ctx, []llm.ContentBlock{tc("c1", "t", ""), tc("c2", "nope", "")}, 1, 1, env, newFakeSink(env.rec))
	if err != nil || !out.Aborted || ran.Load() {
		t.Fatalf("out %+v err %v ran %v", out, err, ran.Load())
	}
	assertTrace(t, env.rec.trace("call", "commit"), []string{"call:c1", "commit:c1", "call:c2", "commit:c2"})
	for id, r := range env.rec.commits() {
		if errCode(r) != session.CodeAbortedBeforeDispatch {
			t.Errorf("%s = %+v", id, r)
		}
	}
}

// Cancelling while an approval is pending withdraws it; later calls get
// synthetic results.
func TestCancelDuringApproval(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, testTool("t", false, okBody("ran")))
	p.Pre = []PreHook{PermissionHook()}
	p.Scope.reg.Unregister("t")
	d := testTool("t", false, okBody("ran"))
	d.Access = AccessWrite
	p.Scope.reg.MustRegister(d)
	ctx, cancel := context.WithCancel(context.Background())
	env := newFakeEnv(t.TempDir())
	env.mode = session.ModeAsk
	env.approve = func(ctx context.Context, call *Call, reason string) session.ApprovalOutcome {
		cancel()
		<-ctx.Done()
		return session.ApprovalCancelled
	}
	out, err := p.Run(ctx, []llm.ContentBlock{tc("c1", "t", ""), tc("c2", "t", "")}, 1, 1, env, newFakeSink(env.rec))
	if err != nil || !out.Aborted {
		t.Fatalf("%+v %v", out, err)
	}
	c := env.rec.commits()
	if r := c["c1"]; !r.IsError || !strings.Contains(resultText(r), "withdrawn") {
		t.Fatalf("c1 = %+v", r)
	}
	if errCode(c["c2"]) != session.CodeAbortedBeforeDispatch {
		t.Fatalf("c2 = %+v", c["c2"])
	}
}

// A Sink error stops new starts, drains running bodies and is returned.
func TestSinkErrors(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"start", "commit"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			var finished atomic.Int32
			p := newPipeline(t, testTool("par", true, func(ctx context.Context, call *Call) (Result, error) {
				defer finished.Add(1)
				if call.ID == "c1" {
					time.Sleep(20 * time.Millisecond) // a fake stall: still running when c3 fails to start
				}
				return TextResult(call.ID), nil
			}))
			env := newFakeEnv(t.TempDir())
			sink := newFakeSink(env.rec)
			if mode == "start" {
				sink.failStartAt = "c3"
			} else {
				sink.failCommit = "c1"
			}
			calls := []llm.ContentBlock{tc("c1", "par", ""), tc("c2", "par", ""), tc("c3", "par", ""), tc("c4", "par", "")}
			_, err := p.Run(context.Background(), calls, 1, 1, env, sink)
			if err == nil || !strings.Contains(err.Error(), "disk full") {
				t.Fatalf("err = %v", err)
			}
			started := env.rec.trace("call")
			if int(finished.Load()) != len(started) {
				t.Fatalf("%d bodies finished, %d started: in-flight bodies must be drained", finished.Load(), len(started))
			}
			failed := false
			for _, rec := range env.rec.all() {
				switch {
				case rec.Kind == "fail":
					failed = true
				case failed && (rec.Kind == "call" || rec.Kind == "commit"):
					t.Fatalf("%s %s after the sink failed", rec.Kind, rec.CallID)
				}
			}
			if !failed {
				t.Fatal("the sink failure was not reached")
			}
		})
	}
}

// Panics in bodies, hooks, guards, approvals and classifiers are contained.
// A classifier panic is exclusive (fail closed), not a crash.
// Around hooks wrap the body; a hook that swaps in an unrelated context
// cannot shield the body from caller cancellation.
// Live output goes through Env.Emit as tool/output between call and result.
