package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"

	"harness/internal/llm"
	"harness/internal/session"
)

// errToolTimeout is the cancellation cause of a definition's deadline, so a
// timeout is told apart from the caller cancelling.
var errToolTimeout = errors.New("tool timeout")

// Fixed results of the pipeline.
func unknownToolResult(name string) Result {
	return ErrorResult(fmt.Sprintf("unknown tool %q", name),
		&session.ToolError{Name: NameToolNotFound, Code: CodeUnknownTool})
}

func invalidArgsResult(name string, err error) Result {
	return ErrorResult(fmt.Sprintf("invalid arguments for %q: %v. Fix the arguments to match the tool's parameter schema and retry.", name, err),
		&session.ToolError{Name: NameToolArgs, Code: CodeInvalidArgs})
}

func abortedBeforeDispatchResult() Result {
	return ErrorResult("tool call aborted before dispatch",
		&session.ToolError{Name: NameAbort, Code: session.CodeAbortedBeforeDispatch})
}

func abortedResult() Result {
	return ErrorResult("tool call aborted",
		&session.ToolError{Name: NameAbort, Code: session.CodeToolAborted})
}

func timeoutResult(d time.Duration) Result {
	return ErrorResult(fmt.Sprintf("tool call timed out after %dms", d.Milliseconds()),
		&session.ToolError{Name: NameToolTimeout, Code: CodeToolTimeout})
}

// panicError records a recovered panic with its stack in the log and turns
// it into a coded error the model can read.
func (p *Pipeline) panicError(where string, call *Call, v any) *CodedError {
	p.logger().Error("tools: panic contained", "where", where, "tool", call.Name, "call", call.ID,
		"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
	return Errorf(NameToolPanic, CodeToolPanic, "%s panicked: %v", where, v)
}

func (p *Pipeline) logger() *slog.Logger {
	if p.Logger != nil {
		return p.Logger
	}
	return slog.Default()
}

// prepare runs the ordered part of a call before its body: resolve, validate,
// abort check, pre-execute waterfall, approval, guards, abort check. It
// returns the entry to dispatch, or the already known result.
func (p *Pipeline) prepare(ctx context.Context, call *Call) (e *entry, r Result, dispatch bool) {
	e, ok := p.Scope.lookup(call.Name)
	if !ok {
		return nil, unknownToolResult(call.Name), false
	}
	call.Access = e.def.Access
	sch, err := e.schema()
	if err != nil {
		return nil, invalidArgsResult(call.Name, fmt.Errorf("the tool's parameter schema does not compile: %w", err)), false
	}
	if err := validateArgs(sch, call.Args); err != nil {
		if !json.Valid([]byte(strings.TrimSpace(call.RawArguments))) && strings.TrimSpace(call.RawArguments) != "" {
			err = fmt.Errorf("the arguments are not valid JSON (%w)", err)
		}
		return nil, invalidArgsResult(call.Name, err), false
	}
	if ctx.Err() != nil {
		return nil, abortedBeforeDispatchResult(), false
	}
	d, err := p.runPre(ctx, call)
	if err != nil {
		return nil, errorToResult(err), false
	}
	if d.Kind == PreAsk {
		outcome, err := p.approve(ctx, call, d.Reason, p.preview(ctx, call, e))
		if err != nil {
			return nil, errorToResult(err), false
		}
		if outcome.Allows() {
			d = PreDecision{Kind: PreAllow}
		} else {
			d = PreDecision{Kind: PreDeny, Reason: denialReason(call, outcome)}
		}
	}
	if d.Kind == PreAllow {
		reason, err := p.runGuards(ctx, call)
		if err != nil {
			return nil, errorToResult(err), false
		}
		if reason != "" {
			d = PreDecision{Kind: PreDeny, Reason: reason}
		}
	}
	if d.Kind != PreAllow {
		reason := d.Reason
		if reason == "" {
			reason = fmt.Sprintf("the %q call was denied", call.Name)
		}
		return nil, ErrorResult(reason, nil), false
	}
	if ctx.Err() != nil {
		return nil, abortedBeforeDispatchResult(), false
	}
	return e, Result{}, true
}

func (p *Pipeline) runPre(ctx context.Context, call *Call) (d PreDecision, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = p.panicError("pre-execute hook", call, v)
		}
	}()
	var at func(i int) func(context.Context) PreDecision
	at = func(i int) func(context.Context) PreDecision {
		return func(ctx context.Context) PreDecision {
			if i >= len(p.Pre) {
				return PreDecision{Kind: PreAllow}
			}
			return p.Pre[i](ctx, call, at(i+1))
		}
	}
	d = at(0)(ctx)
	switch d.Kind {
	case PreAllow, PreDeny, PreAsk:
		return d, nil
	default:
		// An unknown decision is not an allow (fail closed).
		return PreDecision{Kind: PreDeny, Reason: fmt.Sprintf("pre-execute hook returned unknown decision %q", d.Kind)}, nil
	}
}

func (p *Pipeline) approve(ctx context.Context, call *Call, reason string, preview *session.ApprovalPreview) (o session.ApprovalOutcome, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = p.panicError("approval", call, v)
		}
	}()
	if call.Env == nil {
		return session.ApprovalUnavailable, nil
	}
	return call.Env.Approve(ctx, call, reason, preview), nil
}

// preview computes what the call would do for its approver. A missing
// preview function, a panic or a nil result give no preview; the call
// goes on either way.
func (p *Pipeline) preview(ctx context.Context, call *Call, e *entry) (pv *session.ApprovalPreview) {
	if e.def.Preview == nil || call.Env == nil {
		return nil
	}
	defer func() {
		if v := recover(); v != nil {
			p.logger().Error("tools: preview panicked", "tool", call.Name, "call", call.ID,
				"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			pv = nil
		}
	}()
	return e.def.Preview(ctx, call)
}

func (p *Pipeline) runGuards(ctx context.Context, call *Call) (reason string, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = p.panicError("guard", call, v)
		}
	}()
	for _, g := range p.Guards {
		if r := g(ctx, call); r != "" {
			return r, nil
		}
	}
	return "", nil
}

// execute runs the Around chain and the body under the definition's
// deadline. It never abandons the body: it returns only when the body does.
func (p *Pipeline) execute(ctx context.Context, call *Call, e *entry) Result {
	call.out = newLiveOutput(ctx, p.OutputInterval, p.MaxLiveOutput, func(ctx context.Context, stream, text string) {
		if call.Env == nil {
			return
		}
		err := call.Env.Emit(ctx, session.TypeToolOutput, session.ToolOutput{
			Turn: call.Turn, Step: call.Step, CallID: call.ID, Stream: stream, Text: text,
		})
		if err != nil {
			p.logger().Warn("tools: emit tool output", "call", call.ID, "err", err)
		}
	})
	runCtx := ctx
	cancel := context.CancelFunc(func() {})
	if e.def.Timeout > 0 {
		runCtx, cancel = context.WithTimeoutCause(ctx, e.def.Timeout, errToolTimeout)
	}
	r, err := p.runChain(runCtx, call, e)
	cancel()
	call.out.close()

	if e.def.Timeout > 0 && ctx.Err() == nil && errors.Is(context.Cause(runCtx), errToolTimeout) {
		t := timeoutResult(e.def.Timeout)
		t.Meta = r.Meta
		return t
	}
	if err != nil {
		er := errorToResult(err)
		er.Meta = r.Meta
		er.AdditionalContexts = r.AdditionalContexts
		return er
	}
	return r
}

// runChain calls Around[0] → … → body, recovering panics anywhere in it.
func (p *Pipeline) runChain(ctx context.Context, call *Call, e *entry) (r Result, err error) {
	defer func() {
		if v := recover(); v != nil {
			r, err = Result{}, p.panicError(fmt.Sprintf("tool %q", call.Name), call, v)
		}
	}()
	caller := ctx
	var at func(i int) func(context.Context) (Result, error)
	at = func(i int) func(context.Context) (Result, error) {
		return func(hctx context.Context) (Result, error) {
			if i < len(p.Around) {
				return p.Around[i](hctx, call, at(i+1))
			}
			// A wrapper may have swapped the context; fuse it with the caller's
			// so cancellation always reaches the body.
			bctx, stop := fuse(hctx, caller)
			defer stop()
			return e.def.Execute(bctx, call)
		}
	}
	return at(0)(ctx)
}

// fuse returns a context cancelled when either a or b is.
func fuse(a, b context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(a)
	if a == b {
		return ctx, func() { cancel(nil) }
	}
	stop := context.AfterFunc(b, func() { cancel(context.Cause(b)) })
	return ctx, func() { stop(); cancel(nil) }
}

// finish runs in model order once the outcome is known: deferred contexts,
// the cancellation override, the post-execute waterfall, normalization.
func (p *Pipeline) finish(ctx context.Context, call *Call, r Result, bodyRan bool) Result {
	deferred, concludes := call.takeDeferred()
	if len(deferred) > 0 {
		r.AdditionalContexts = append(append([]llm.Message{}, deferred...), r.AdditionalContexts...)
	}
	if concludes && !r.IsError {
		r.ConcludesTurn = true
	}
	r = cancelOverride(ctx, r, bodyRan)
	r = p.runPost(ctx, call, r)
	r = cancelOverride(ctx, r, bodyRan)
	if r.IsError {
		r.ConcludesTurn = false
	}
	if r.Content == nil {
		r.Content = []llm.ContentBlock{}
	}
	for i, m := range r.AdditionalContexts {
		r.AdditionalContexts[i] = normalizeContext(m)
	}
	return r
}

// cancelOverride replaces a successful result with the cancellation result
// when the caller cancelled, keeping contexts and presentation data.
func cancelOverride(ctx context.Context, r Result, bodyRan bool) Result {
	if ctx.Err() == nil || r.IsError {
		return r
	}
	a := abortedBeforeDispatchResult()
	if bodyRan {
		a = abortedResult()
	}
	a.Meta = r.Meta
	a.AdditionalContexts = r.AdditionalContexts
	return a
}

func (p *Pipeline) runPost(ctx context.Context, call *Call, r Result) (out Result) {
	defer func() {
		if v := recover(); v != nil {
			out = errorToResult(p.panicError("post-execute hook", call, v))
		}
	}()
	var at func(i int) func(context.Context) PostDecision
	at = func(i int) func(context.Context) PostDecision {
		return func(ctx context.Context) PostDecision {
			if i >= len(p.Post) {
				return PostDecision{Kind: PostAccept}
			}
			return p.Post[i](ctx, call, r, at(i+1))
		}
	}
	d := at(0)(ctx)
	switch d.Kind {
	case PostBlock:
		return Result{
			Content:            []llm.ContentBlock{llm.Text(d.Feedback)},
			IsError:            true,
			Meta:               r.Meta,
			AdditionalContexts: d.AdditionalContexts, // body-deferred contexts are dropped
		}
	case PostAccept, "":
		if d.Content != nil {
			r.Content = d.Content
		}
		r.AdditionalContexts = append(r.AdditionalContexts, d.AdditionalContexts...)
		return r
	default:
		return errorToResult(fmt.Errorf("post-execute hook returned unknown decision %q", d.Kind))
	}
}

// normalizeContext fills what a tool may leave out of a context message.
func normalizeContext(m llm.Message) llm.Message {
	if m.ID == "" {
		m.ID = llm.NewID()
	}
	if m.Role == "" {
		m.Role = llm.RoleUser
	}
	if m.Source.Kind == "" {
		m.Source = llm.Source{Kind: llm.SourcePlugin, Plugin: llm.PluginToolContext}
	}
	if m.Content == nil {
		m.Content = []llm.ContentBlock{}
	}
	return m
}
