package builtin

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"harness/internal/llm"
	"harness/internal/sandbox"
	"harness/internal/sandbox/sandboxtest"
	"harness/internal/session"
	"harness/internal/tools"
)

// The fakes below are the host side of the pipeline as the built-in tools'
// tests need it (package tools has its own, with failure injection for the
// scheduler's tests): a recording Env whose processes run in the real
// sandbox, and a recording Sink.

// record is one observable event of a step, in the order it happened.
type record struct {
	Kind   string // "call", "commit", "emit", "approve", "ask"
	CallID string
	Result tools.Result
	Type   session.Type
	Data   any
}

// recorder is shared by the fake Env and Sink so their events interleave in
// one ordered list.
type recorder struct {
	mu   sync.Mutex
	recs []record
}

func (r *recorder) add(rec record) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec)
	return int64(len(r.recs) - 1)
}

func (r *recorder) all() []record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]record(nil), r.recs...)
}

// trace returns "kind:callID" for the given kinds, in order.
func (r *recorder) trace(kinds ...string) []string {
	var out []string
	for _, rec := range r.all() {
		for _, k := range kinds {
			if rec.Kind == k {
				out = append(out, rec.Kind+":"+rec.CallID)
			}
		}
	}
	return out
}

func (r *recorder) commits() map[string]tools.Result {
	out := map[string]tools.Result{}
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
	approve func(ctx context.Context, call *tools.Call, reason string) session.ApprovalOutcome
	ask     func(ctx context.Context, call *tools.Call, qs []session.Question) ([]session.Answer, error)

	mu       sync.Mutex
	previews []*session.ApprovalPreview // what each Approve was shown
}

func newFakeEnv(ws string) *fakeEnv {
	return &fakeEnv{ws: ws, mode: session.ModeAuto, rec: &recorder{}}
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

// Command runs tool processes in the real sandbox, as the server does.
func (e *fakeEnv) Command(_ context.Context, p tools.Process) (*exec.Cmd, error) {
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

func (e *fakeEnv) Emit(_ context.Context, t session.Type, data any) error {
	id := ""
	if o, ok := data.(session.ToolOutput); ok {
		id = o.CallID
	}
	e.rec.add(record{Kind: "emit", Type: t, Data: data, CallID: id})
	return nil
}

func (e *fakeEnv) Approve(ctx context.Context, call *tools.Call, reason string, preview *session.ApprovalPreview) session.ApprovalOutcome {
	e.rec.add(record{Kind: "approve", CallID: call.ID, Data: reason})
	e.mu.Lock()
	e.previews = append(e.previews, preview)
	e.mu.Unlock()
	if e.approve == nil {
		return session.ApprovalUnavailable
	}
	return e.approve(ctx, call, reason)
}

func (e *fakeEnv) Ask(ctx context.Context, call *tools.Call, qs []session.Question) ([]session.Answer, error) {
	e.rec.add(record{Kind: "ask", CallID: call.ID, Data: qs})
	if e.ask == nil {
		return nil, errors.New("no question channel")
	}
	return e.ask(ctx, call, qs)
}

// fakeSink is a recording Sink.
type fakeSink struct{ rec *recorder }

func newFakeSink(rec *recorder) *fakeSink { return &fakeSink{rec: rec} }

func (s *fakeSink) CallStarted(_ context.Context, call *tools.Call) (int64, error) {
	return s.rec.add(record{Kind: "call", CallID: call.ID}), nil
}

func (s *fakeSink) Commit(_ context.Context, call *tools.Call, _ int64, r tools.Result) error {
	s.rec.add(record{Kind: "commit", CallID: call.ID, Result: r})
	return nil
}

// tc builds a tool-call block.
func tc(id, name, args string) llm.ContentBlock { return llm.ToolCall(id, name, args) }

func resultText(r tools.Result) string { return r.Text() }

func errCode(r tools.Result) string {
	if r.Error == nil {
		return ""
	}
	return r.Error.Code
}

func assertTrace(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("trace:\n got %v\nwant %v", got, want)
	}
}
