package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"harness/internal/llm"
	"harness/internal/session"
)

func TestPreExecuteDeny(t *testing.T) {
	t.Parallel()
	var ran atomic.Int32
	p := newPipeline(t, testTool("t", false, func(ctx context.Context, call *Call) (Result, error) {
		ran.Add(1)
		return TextResult("ran " + call.ID), nil
	}))
	p.Pre = []PreHook{func(ctx context.Context, call *Call, next func(context.Context) PreDecision) PreDecision {
		if call.ID == "c1" {
			return PreDecision{Kind: PreDeny, Reason: "not today"}
		}
		return next(ctx)
	}}
	env := newFakeEnv(t.TempDir())
	if _, err := p.Run(context.Background(), []llm.ContentBlock{tc("c1", "t", ""), tc("c2", "t", "")}, 1, 1, env, newFakeSink(env.rec)); err != nil {
		t.Fatal(err)
	}
	c := env.rec.commits()
	if !c["c1"].IsError || resultText(c["c1"]) != "Error: not today" || c["c1"].Error != nil {
		t.Fatalf("c1 = %+v", c["c1"])
	}
	if c["c2"].IsError || resultText(c["c2"]) != "ran c2" || ran.Load() != 1 {
		t.Fatalf("c2 = %+v, ran %d", c["c2"], ran.Load())
	}
}

func TestGuardDenies(t *testing.T) {
	t.Parallel()
	var ran atomic.Bool
	p := newPipeline(t, testTool("t", false, func(ctx context.Context, call *Call) (Result, error) {
		ran.Store(true)
		return TextResult("ran"), nil
	}))
	p.Guards = []Guard{
		func(ctx context.Context, call *Call) string { return "" },
		func(ctx context.Context, call *Call) string { return "guarded: " + call.Name },
	}
	env := newFakeEnv(t.TempDir())
	if _, err := p.Run(context.Background(), []llm.ContentBlock{tc("c1", "t", "")}, 1, 1, env, newFakeSink(env.rec)); err != nil {
		t.Fatal(err)
	}
	if r := env.rec.commits()["c1"]; !r.IsError || resultText(r) != "Error: guarded: t" || ran.Load() {
		t.Fatalf("got %+v ran=%v", r, ran.Load())
	}
}

func TestUnknownTool(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, testTool("t", false, okBody("fine")))
	env := newFakeEnv(t.TempDir())
	if _, err := p.Run(context.Background(), []llm.ContentBlock{tc("c1", "nope", "{}"), tc("c2", "t", "")}, 1, 1, env, newFakeSink(env.rec)); err != nil {
		t.Fatal(err)
	}
	c := env.rec.commits()
	r := c["c1"]
	if !r.IsError || resultText(r) != `Error: unknown tool "nope"` || r.Error == nil || *r.Error != (session.ToolError{Name: "ToolNotFoundError", Code: "UNKNOWN_TOOL"}) {
		t.Fatalf("c1 = %+v", r)
	}
	if resultText(c["c2"]) != "fine" {
		t.Fatalf("c2 = %+v", c["c2"])
	}
}

func TestBodyErrors(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, testTool("t", false, func(ctx context.Context, call *Call) (Result, error) {
		switch call.ID {
		case "coded":
			return Result{}, &CodedError{Name: "QuotaError", Code: "QUOTA", Message: "too many"}
		case "wrapped":
			return Result{}, fmt.Errorf("while working: %w", Errorf("FsError", "FS_X", "inner"))
		case "plain":
			return Result{}, errors.New("boom")
		default: // a tool-reported error result
			return Result{Content: []llm.ContentBlock{llm.Text("custom failure")}, IsError: true}, nil
		}
	}))
	env := newFakeEnv(t.TempDir())
	calls := []llm.ContentBlock{tc("coded", "t", ""), tc("wrapped", "t", ""), tc("plain", "t", ""), tc("own", "t", "")}
	if _, err := p.Run(context.Background(), calls, 1, 1, env, newFakeSink(env.rec)); err != nil {
		t.Fatal(err)
	}
	c := env.rec.commits()
	tests := []struct {
		id, text string
		code     *session.ToolError
	}{
		{"coded", "Error: too many", &session.ToolError{Name: "QuotaError", Code: "QUOTA"}},
		{"wrapped", "Error: while working: inner", &session.ToolError{Name: "FsError", Code: "FS_X"}},
		{"plain", "Error: boom", nil},
		{"own", "custom failure", nil},
	}
	for _, tt := range tests {
		r := c[tt.id]
		if !r.IsError || resultText(r) != tt.text {
			t.Errorf("%s: %+v", tt.id, r)
		}
		if (tt.code == nil) != (r.Error == nil) || (tt.code != nil && *tt.code != *r.Error) {
			t.Errorf("%s: error %+v, want %+v", tt.id, r.Error, tt.code)
		}
	}
}

func TestArgumentNormalization(t *testing.T) {
	t.Parallel()
	var got sync.Map
	d := testTool("t", false, func(ctx context.Context, call *Call) (Result, error) {
		got.Store(call.ID, string(call.Args))
		return TextResult("ok"), nil
	})
	d.Parameters = json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"additionalProperties":false}`)
	p := newPipeline(t, d)
	env := newFakeEnv(t.TempDir())
	calls := []llm.ContentBlock{
		tc("empty", "t", ""), tc("notjson", "t", "not json"), tc("wrongtype", "t", `{"n":"x"}`),
		tc("extra", "t", `{"m":1}`), tc("array", "t", `[1]`), tc("good", "t", ` {"n": 2} `),
	}
	if _, err := p.Run(context.Background(), calls, 1, 1, env, newFakeSink(env.rec)); err != nil {
		t.Fatal(err)
	}
	c := env.rec.commits()
	if v, _ := got.Load("empty"); v != "{}" || c["empty"].IsError {
		t.Fatalf("empty args: body got %v, %+v", v, c["empty"])
	}
	if v, _ := got.Load("good"); v != `{"n": 2}` {
		t.Fatalf("good args: body got %v", v)
	}
	for id, mention := range map[string]string{"notjson": "not valid JSON", "wrongtype": "/n", "extra": "m", "array": `has type "array"`} {
		r := c[id]
		if _, ran := got.Load(id); ran {
			t.Errorf("%s: body ran", id)
		}
		if !r.IsError || errCode(r) != CodeInvalidArgs || r.Error.Name != NameToolArgs {
			t.Errorf("%s: %+v", id, r)
		}
		if text := resultText(r); !strings.HasPrefix(text, `Error: invalid arguments for "t": `) || !strings.Contains(text, mention) {
			t.Errorf("%s: text %q does not mention %q", id, text, mention)
		}
	}
}

func TestDefinitionTimeout(t *testing.T) {
	t.Parallel()
	var finished atomic.Bool
	d := testTool("slow", false, func(ctx context.Context, call *Call) (Result, error) {
		defer finished.Store(true)
		<-ctx.Done()
		return Result{}, ctx.Err()
	})
	d.Timeout = 50 * time.Millisecond
	p := newPipeline(t, d)
	env := newFakeEnv(t.TempDir())
	if _, err := p.Run(context.Background(), []llm.ContentBlock{tc("c1", "slow", "")}, 1, 1, env, newFakeSink(env.rec)); err != nil {
		t.Fatal(err)
	}
	r := env.rec.commits()["c1"]
	if !r.IsError || resultText(r) != "Error: tool call timed out after 50ms" || *r.Error != (session.ToolError{Name: "ToolTimeoutError", Code: "TOOL_TIMEOUT"}) {
		t.Fatalf("got %+v", r)
	}
	if !finished.Load() {
		t.Fatal("body abandoned")
	}
}

func TestApprovalOutcomes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		outcome session.ApprovalOutcome
		ran     bool
		mention string
	}{
		{session.ApprovalAllowedOnce, true, "ran"},
		{session.ApprovalAllowedSession, true, "ran"},
		{session.ApprovalRejected, false, "the user rejected"},
		{session.ApprovalCancelled, false, "withdrawn"},
		{session.ApprovalUnavailable, false, "no approval channel"},
	}
	for _, tt := range tests {
		t.Run(string(tt.outcome), func(t *testing.T) {
			t.Parallel()
			var ran atomic.Bool
			p := newPipeline(t, testTool("t", false, func(ctx context.Context, call *Call) (Result, error) {
				ran.Store(true)
				return TextResult("ran"), nil
			}))
			p.Pre = []PreHook{func(ctx context.Context, call *Call, next func(context.Context) PreDecision) PreDecision {
				return PreDecision{Kind: PreAsk, Reason: "please confirm"}
			}}
			env := newFakeEnv(t.TempDir())
			env.approve = func(ctx context.Context, call *Call, reason string) session.ApprovalOutcome { return tt.outcome }
			if _, err := p.Run(context.Background(), []llm.ContentBlock{tc("c1", "t", "")}, 1, 1, env, newFakeSink(env.rec)); err != nil {
				t.Fatal(err)
			}
			r := env.rec.commits()["c1"]
			if ran.Load() != tt.ran || r.IsError == tt.ran || !strings.Contains(resultText(r), tt.mention) {
				t.Fatalf("ran=%v result=%+v", ran.Load(), r)
			}
			assertTrace(t, env.rec.trace("call", "approve", "commit"), []string{"call:c1", "approve:c1", "commit:c1"})
			for _, rec := range env.rec.all() {
				if rec.Kind == "approve" && rec.Data != "please confirm" {
					t.Fatalf("approval reason %v", rec.Data)
				}
			}
		})
	}
}

func TestPostBlock(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, testTool("t", false, func(ctx context.Context, call *Call) (Result, error) {
		call.DeferContext(llm.UserText("deferred", llm.Source{Kind: llm.SourceTool}))
		call.ConcludeTurn()
		return TextResult("secret output"), nil
	}))
	p.Post = []PostHook{func(ctx context.Context, call *Call, r Result, next func(context.Context) PostDecision) PostDecision {
		return PostDecision{Kind: PostBlock, Feedback: "output withheld", AdditionalContexts: []llm.Message{llm.UserText("from hook", llm.Source{Kind: llm.SourcePlugin})}}
	}}
	env := newFakeEnv(t.TempDir())
	out, err := p.Run(context.Background(), []llm.ContentBlock{tc("c1", "t", "")}, 1, 1, env, newFakeSink(env.rec))
	if err != nil {
		t.Fatal(err)
	}
	r := env.rec.commits()["c1"]
	if !r.IsError || resultText(r) != "output withheld" || len(r.AdditionalContexts) != 1 || r.AdditionalContexts[0].Text() != "from hook" {
		t.Fatalf("got %+v", r)
	}
	if out.Concluded || r.ConcludesTurn {
		t.Fatal("a blocked result must not conclude the turn")
	}
}

func TestPostAcceptReplacesContent(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, testTool("t", false, okBody("raw")))
	p.Post = []PostHook{
		func(ctx context.Context, call *Call, r Result, next func(context.Context) PostDecision) PostDecision {
			d := next(ctx)
			d.Content = []llm.ContentBlock{llm.Text("outer saw " + r.Text())}
			return d
		},
		func(ctx context.Context, call *Call, r Result, next func(context.Context) PostDecision) PostDecision {
			return PostDecision{Kind: PostAccept, Content: []llm.ContentBlock{llm.Text("inner")}}
		},
	}
	env := newFakeEnv(t.TempDir())
	if _, err := p.Run(context.Background(), []llm.ContentBlock{tc("c1", "t", "")}, 1, 1, env, newFakeSink(env.rec)); err != nil {
		t.Fatal(err)
	}
	if r := env.rec.commits()["c1"]; r.IsError || resultText(r) != "outer saw raw" {
		t.Fatalf("got %+v", r)
	}
}

func TestConcludeTurn(t *testing.T) {
	t.Parallel()
	for _, fail := range []bool{false, true} {
		p := newPipeline(t, testTool("t", false, func(ctx context.Context, call *Call) (Result, error) {
			call.ConcludeTurn()
			if fail {
				return Result{}, errors.New("nope")
			}
			return TextResult("done"), nil
		}))
		env := newFakeEnv(t.TempDir())
		out, err := p.Run(context.Background(), []llm.ContentBlock{tc("c1", "t", "")}, 1, 1, env, newFakeSink(env.rec))
		if err != nil {
			t.Fatal(err)
		}
		if out.Concluded == fail || env.rec.commits()["c1"].ConcludesTurn == fail {
			t.Fatalf("fail=%v: outcome %+v", fail, out)
		}
	}
}

func TestPanicsContained(t *testing.T) {
	t.Parallel()
	type setup func(p *Pipeline, env *fakeEnv)
	tests := []struct {
		name  string
		setup setup
	}{
		{"body", func(p *Pipeline, env *fakeEnv) {}},
		{"pre", func(p *Pipeline, env *fakeEnv) {
			p.Pre = []PreHook{func(context.Context, *Call, func(context.Context) PreDecision) PreDecision { panic("pre") }}
		}},
		{"post", func(p *Pipeline, env *fakeEnv) {
			p.Post = []PostHook{func(context.Context, *Call, Result, func(context.Context) PostDecision) PostDecision { panic("post") }}
		}},
		{"guard", func(p *Pipeline, env *fakeEnv) {
			p.Guards = []Guard{func(context.Context, *Call) string { panic("guard") }}
		}},
		{"around", func(p *Pipeline, env *fakeEnv) {
			p.Around = []ExecuteHook{func(context.Context, *Call, func(context.Context) (Result, error)) (Result, error) { panic("around") }}
		}},
		{"approve", func(p *Pipeline, env *fakeEnv) {
			p.Pre = []PreHook{func(context.Context, *Call, func(context.Context) PreDecision) PreDecision {
				return PreDecision{Kind: PreAsk}
			}}
			env.approve = func(context.Context, *Call, string) session.ApprovalOutcome { panic("approve") }
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			body := okBody("fine")
			if tt.name == "body" {
				// A runtime panic (assignment to a nil map), not a panic() call.
				//lint:ignore SA5000 the panic is the point
				body = func(context.Context, *Call) (Result, error) { var m map[string]int; m["x"] = 1; return Result{}, nil }
			}
			p := newPipeline(t, testTool("t", false, body))
			env := newFakeEnv(t.TempDir())
			tt.setup(p, env)
			if _, err := p.Run(context.Background(), []llm.ContentBlock{tc("c1", "t", ""), tc("c2", "nope", "")}, 1, 1, env, newFakeSink(env.rec)); err != nil {
				t.Fatal(err)
			}
			r := env.rec.commits()["c1"]
			if !r.IsError || errCode(r) != CodeToolPanic || !strings.Contains(resultText(r), "panicked") {
				t.Fatalf("got %+v", r)
			}
			if len(env.rec.commits()) != 2 {
				t.Fatal("the step did not go on after the panic")
			}
		})
	}
}

func TestClassifierPanicIsExclusive(t *testing.T) {
	t.Parallel()
	d := testTool("t", false, okBody("ok"))
	d.ConcurrencySafe = func(json.RawMessage) bool { panic("classify") }
	p := newPipeline(t, d)
	if m := p.Scope.ExecutionMode("t", json.RawMessage(`{}`)); m != ModeExclusive {
		t.Fatalf("mode %s", m)
	}
}

func TestAroundHooks(t *testing.T) {
	t.Parallel()
	var order []string
	var mu sync.Mutex
	log := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	started := make(chan struct{})
	p := newPipeline(t, testTool("t", false, func(ctx context.Context, call *Call) (Result, error) {
		log("body")
		close(started)
		<-ctx.Done()
		return TextResult("stopped"), nil
	}))
	p.Around = []ExecuteHook{
		func(ctx context.Context, call *Call, next func(context.Context) (Result, error)) (Result, error) {
			log("outer>")
			defer log("<outer")
			return next(ctx)
		},
		func(ctx context.Context, call *Call, next func(context.Context) (Result, error)) (Result, error) {
			log("inner>")
			defer log("<inner")
			return next(context.Background())
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	env := newFakeEnv(t.TempDir())
	done := make(chan error, 1)
	go func() {
		_, err := p.Run(ctx, []llm.ContentBlock{tc("c1", "t", "")}, 1, 1, env, newFakeSink(env.rec))
		done <- err
	}()
	waitFor(t, started, "body start")
	cancel()
	if err := waitFor(t, done, "Run"); err != nil {
		t.Fatal(err)
	}
	if strings.Join(order, " ") != "outer> inner> body <inner <outer" {
		t.Fatalf("order %v", order)
	}
	if r := env.rec.commits()["c1"]; errCode(r) != session.CodeToolAborted {
		t.Fatalf("got %+v", r)
	}
}

func TestLiveOutputThroughPipeline(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, testTool("t", false, func(ctx context.Context, call *Call) (Result, error) {
		call.Output("stdout", "hello ")
		call.Output("stdout", "world")
		call.Output("stderr", "oops")
		return TextResult("ok"), nil
	}))
	env := newFakeEnv(t.TempDir())
	if _, err := p.Run(context.Background(), []llm.ContentBlock{tc("c1", "t", "")}, 3, 4, env, newFakeSink(env.rec)); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	var stdout, stderr string
	for _, rec := range env.rec.all() {
		kinds = append(kinds, rec.Kind)
		if o, ok := rec.Data.(session.ToolOutput); ok {
			if o.Turn != 3 || o.Step != 4 || o.CallID != "c1" {
				t.Fatalf("output event %+v", o)
			}
			if o.Stream == "stdout" {
				stdout += o.Text
			} else {
				stderr += o.Text
			}
		}
	}
	if kinds[0] != "call" || kinds[len(kinds)-1] != "commit" || stdout != "hello world" || stderr != "oops" {
		t.Fatalf("kinds %v stdout %q stderr %q", kinds, stdout, stderr)
	}
}
