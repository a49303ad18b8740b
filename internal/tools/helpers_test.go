package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"harness/internal/llm"
	"harness/internal/sandbox"
	"harness/internal/sandbox/sandboxtest"
	"harness/internal/session"
)

// record is one observable event of a step, in the order it happened.
type record struct {
	Kind   string // "call", "commit", "emit", "approve", "ask"
	CallID string
	Seq    int64
	Result Result
	Type   session.Type
	Data   any
	At     time.Time
	// CtxErr is the error of the ctx the host was called with.
	CtxErr error
}

// recorder is shared by the fake Env and Sink so their events interleave in
// one ordered list.
type recorder struct {
	mu   sync.Mutex
	recs []record
	seq  int64
}

func (r *recorder) add(rec record) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec.Seq = r.seq
	rec.At = time.Now()
	r.seq++
	r.recs = append(r.recs, rec)
	return rec.Seq
}

func (r *recorder) all() []record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]record(nil), r.recs...)
}

// trace returns "kind:callID" for the given kinds, in order.
func (r *recorder) trace(kinds ...string) []string {
	want := map[string]bool{}
	for _, k := range kinds {
		want[k] = true
	}
	var out []string
	for _, rec := range r.all() {
		if want[rec.Kind] {
			out = append(out, rec.Kind+":"+rec.CallID)
		}
	}
	return out
}

func (r *recorder) commits() map[string]Result {
	out := map[string]Result{}
	for _, rec := range r.all() {
		if rec.Kind == "commit" {
			out[rec.CallID] = rec.Result
		}
	}
	return out
}

func (r *recorder) emits(t session.Type) []record {
	var out []record
	for _, rec := range r.all() {
		if rec.Kind == "emit" && rec.Type == t {
			out = append(out, rec)
		}
	}
	return out
}

// fakeEnv is a recording Env.
type fakeEnv struct {
	ws      string
	mode    session.PermissionMode
	network bool // the session's network policy
	rec     *recorder
	approve func(ctx context.Context, call *Call, reason string) session.ApprovalOutcome
	ask     func(ctx context.Context, call *Call, qs []session.Question) ([]session.Answer, error)
	emitErr error
	// refuseDone makes Emit fail without recording when its ctx is done,
	// as a host that honours ctx may.
	refuseDone bool

	mu       sync.Mutex
	previews []*session.ApprovalPreview // what each Approve was shown
}

// lastPreview is the preview of the latest approval request.
func (e *fakeEnv) lastPreview() *session.ApprovalPreview {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.previews) == 0 {
		return nil
	}
	return e.previews[len(e.previews)-1]
}

func newFakeEnv(ws string) *fakeEnv {
	return &fakeEnv{ws: ws, mode: session.ModeAuto, rec: &recorder{}}
}

// Command runs tool processes in the real sandbox, as the server does.
func (e *fakeEnv) Command(_ context.Context, p Process) (*exec.Cmd, error) {
	sb, err := sandboxtest.Get()
	if err != nil {
		return nil, err
	}
	// The workspace belongs to the tools' user, as the server makes it.
	if err := sb.Own(e.ws); err != nil {
		return nil, err
	}
	return sb.Command(sandbox.Process{
		Path: p.Path, Args: p.Args, Env: p.Env, Dir: p.Dir,
		Workspace: e.ws, WorkspaceReadOnly: p.ReadOnlyWorkspace,
	})
}

func (e *fakeEnv) Workspace() string                      { return e.ws }
func (e *fakeEnv) PermissionMode() session.PermissionMode { return e.mode }
func (e *fakeEnv) Network(context.Context) bool           { return e.network }

func (e *fakeEnv) Emit(ctx context.Context, t session.Type, data any) error {
	if e.emitErr != nil {
		return e.emitErr
	}
	if e.refuseDone && ctx.Err() != nil {
		return ctx.Err()
	}
	id := ""
	if o, ok := data.(session.ToolOutput); ok {
		id = o.CallID
	}
	e.rec.add(record{Kind: "emit", Type: t, Data: data, CallID: id})
	return nil
}

func (e *fakeEnv) Approve(ctx context.Context, call *Call, reason string, preview *session.ApprovalPreview) session.ApprovalOutcome {
	e.rec.add(record{Kind: "approve", CallID: call.ID, Data: reason})
	e.mu.Lock()
	e.previews = append(e.previews, preview)
	e.mu.Unlock()
	if e.approve == nil {
		return session.ApprovalUnavailable
	}
	return e.approve(ctx, call, reason)
}

func (e *fakeEnv) Ask(ctx context.Context, call *Call, qs []session.Question) ([]session.Answer, error) {
	e.rec.add(record{Kind: "ask", CallID: call.ID, Data: qs})
	if e.ask == nil {
		return nil, errors.New("no question channel")
	}
	return e.ask(ctx, call, qs)
}

// fakeSink is a recording Sink with optional hooks and failure injection.
type fakeSink struct {
	rec         *recorder
	onStart     func(call *Call)
	onCommit    func(call *Call, r Result)
	failStartAt string
	failCommit  string
	seqs        map[string]int64
	mu          sync.Mutex
}

func newFakeSink(rec *recorder) *fakeSink { return &fakeSink{rec: rec, seqs: map[string]int64{}} }

func (s *fakeSink) CallStarted(ctx context.Context, call *Call) (int64, error) {
	if call.ID == s.failStartAt {
		s.rec.add(record{Kind: "fail", CallID: call.ID})
		return 0, errors.New("disk full")
	}
	seq := s.rec.add(record{Kind: "call", CallID: call.ID, CtxErr: ctx.Err()})
	s.mu.Lock()
	s.seqs[call.ID] = seq
	s.mu.Unlock()
	if s.onStart != nil {
		s.onStart(call)
	}
	return seq, nil
}

func (s *fakeSink) Commit(ctx context.Context, call *Call, callSeq int64, r Result) error {
	s.mu.Lock()
	want := s.seqs[call.ID]
	s.mu.Unlock()
	if callSeq != want {
		return fmt.Errorf("commit %s cites seq %d, want %d", call.ID, callSeq, want)
	}
	if call.ID == s.failCommit {
		s.rec.add(record{Kind: "fail", CallID: call.ID})
		return errors.New("disk full")
	}
	s.rec.add(record{Kind: "commit", CallID: call.ID, Result: r, CtxErr: ctx.Err()})
	if s.onCommit != nil {
		s.onCommit(call, r)
	}
	return nil
}

// tc builds a tool-call block.
func tc(id, name, args string) llm.ContentBlock { return llm.ToolCall(id, name, args) }

// objectSchema is the permissive schema used by test tools.
const objectSchema = `{"type":"object"}`

// testTool builds a definition with the given body.
func testTool(name string, parallel bool, body func(ctx context.Context, call *Call) (Result, error)) Definition {
	d := Definition{
		Name: name, Description: "test tool " + name, Parameters: json.RawMessage(objectSchema),
		Access: AccessRead, Execute: body,
	}
	if parallel {
		d.ConcurrencySafe = func(json.RawMessage) bool { return true }
	}
	return d
}

func okBody(text string) func(context.Context, *Call) (Result, error) {
	return func(context.Context, *Call) (Result, error) { return TextResult(text), nil }
}

// waitFor receives from ch or fails the test after a generous hang guard.
func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second):
		t.Fatalf("hang guard: timed out waiting for %s", what)
		var zero T
		return zero
	}
}

func resultText(r Result) string { return r.Text() }

func assertTrace(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("trace:\n got %v\nwant %v", got, want)
	}
}

func errCode(r Result) string {
	if r.Error == nil {
		return ""
	}
	return r.Error.Code
}
