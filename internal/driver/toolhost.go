package driver

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"

	"harness/internal/llm"
	"harness/internal/sandbox"
	"harness/internal/session"
	"harness/internal/tools"
)

// toolSink logs a step's tool activity for the scheduler.
type toolSink struct {
	a          *Agent
	turn, step int
}

// CallStarted appends tool/call and makes it durable before the body runs,
// so crash repair can tell a started call (outcome unknown) from one that
// never started. ctx is the step's: once it is cancelled no body runs, so
// the wait is cut short and the turn's final flush makes the call durable.
func (s *toolSink) CallStarted(ctx context.Context, call *tools.Call) (int64, error) {
	ev, err := s.a.log.Append(session.TypeToolCall, session.ToolCall{
		Turn: s.turn, Step: s.step, CallID: call.ID, Name: call.Name, Arguments: call.RawArguments,
	})
	if err != nil {
		return 0, err
	}
	if err := s.a.m.store.Flush(ctx, s.a.id); err != nil {
		if ctx.Err() != nil {
			return ev.Seq, nil
		}
		return 0, fmt.Errorf("flush before tool body: %w", err)
	}
	return ev.Seq, nil
}

// Commit appends tool/result citing its call, then queues the result's
// additional contexts for the next step. It only appends (the turn's final
// flush makes it durable), so it has nothing to wait for with ctx.
func (s *toolSink) Commit(_ context.Context, call *tools.Call, callSeq int64, r tools.Result) error {
	content := r.Content
	if content == nil {
		content = []llm.ContentBlock{}
	}
	msg := llm.ToolResultMessage(llm.NewID(), call.ID, content, r.IsError)
	data := session.ToolResult{Turn: s.turn, Step: s.step, Message: msg, Error: r.Error}
	if len(r.Meta) > 0 && json.Valid(r.Meta) {
		data.Meta = r.Meta
	}
	if _, err := s.a.log.AppendSurface(session.TypeToolResult, data, session.Append(), []int64{callSeq}); err != nil {
		return err
	}
	var code session.ToolError
	if r.Error != nil {
		code = *r.Error
	}
	s.a.m.opts.Observer.ToolDone(call.Name, toolOutcome(code, r.IsError))
	return s.a.appendContexts(r.AdditionalContexts)
}

// toolEnv is what tool bodies see of their agent.
type toolEnv struct {
	a          *Agent
	turn, step int
}

func (e *toolEnv) Workspace() string { return e.a.workspace }

// errNoConfiner refuses tool processes when no sandbox was wired in.
var errNoConfiner = fmt.Errorf("%w: this server has no sandbox configured", sandbox.ErrUnavailable)

func (e *toolEnv) Command(ctx context.Context, p tools.Process) (*exec.Cmd, error) {
	c := e.a.m.opts.Confiner
	if c == nil {
		return nil, errNoConfiner
	}
	return c.Command(ctx, e.a.sandbox, e.a.workspace, p)
}

// PermissionMode is the session's mode; a subagent's is never wider than
// its parent's: it is read-only unless the live parent is in auto mode now
// (a parent switched out of auto mid-task stops the child's writes).
func (e *toolEnv) PermissionMode() session.PermissionMode {
	mode := e.a.log.State().Mode
	if e.a.subagent {
		if p := e.a.parent; p == nil || p.log.State().Mode != session.ModeAuto {
			return session.ModeReadOnly
		}
	}
	return mode
}

func (e *toolEnv) Network(ctx context.Context) bool {
	n := e.a.m.opts.Network
	return n != nil && n(ctx, e.a.sandbox)
}

// Emit only appends (the log's sink enqueues without blocking), so it has
// nothing to wait for with ctx.
func (e *toolEnv) Emit(_ context.Context, t session.Type, data any) error {
	_, err := e.a.log.Append(t, data)
	return err
}

func (e *toolEnv) Approve(ctx context.Context, call *tools.Call, reason string, preview *session.ApprovalPreview) session.ApprovalOutcome {
	return e.a.requestApproval(ctx, e.turn, call, reason, preview)
}

func (e *toolEnv) Ask(ctx context.Context, call *tools.Call, qs []session.Question) ([]session.Answer, error) {
	return e.a.askQuestions(ctx, e.turn, call, qs)
}
