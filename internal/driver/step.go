package driver

import (
	"context"
	"fmt"
	"time"

	"harness/internal/llm"
	"harness/internal/session"
	"harness/internal/tools"
)

// step runs one step after its user messages were logged: request, stream,
// retries, assistant message, tools. It returns the step's outcome (nil when
// tools owe the model another request) or an error that ends the turn.
func (a *Agent) step(ctx context.Context, act *activity, turn, step int, asm *Assembly) (stepOutcome, error) {
	system, err := renderSections(asm.Sections, asm.Vars)
	if err != nil {
		return nil, err
	}
	for {
		req, prov, info, err := a.buildRequest(ctx, turn, step, system, asm.Tools)
		if err != nil {
			return nil, err
		}
		if err := a.m.store.Flush(ctx, a.id); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, &llm.Failure{Code: CodePersistence, Message: fmt.Sprintf("session not durable before the request: %v", err)}
		}

		began := time.Now()
		res, err := a.stream(ctx, turn, step, prov, req)
		if err != nil {
			return nil, err
		}
		a.observeRequest(ctx, req.Provider, res, time.Since(began))
		if ctx.Err() != nil {
			a.finalizeInterrupted(turn, step, res)
			return nil, ctx.Err()
		}

		fin := res.asm.Finish()
		if fin.Kind == llm.FinishError || fin.Kind == llm.FinishAborted {
			failure := fin.Failure
			if failure == nil {
				failure = &llm.Failure{Code: llm.CodeUnknown, Message: "request failed"}
			}
			decision, err := a.requestError(ctx, turn, step, info, failure)
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if err != nil {
				return nil, err
			}
			if !decision.Retry {
				return nil, failure
			}
			continue
		}

		msg := res.asm.Message(llm.NewID(), llm.Source{Kind: llm.SourceModel, Provider: req.Provider, Model: req.Model})
		seqs := res.seqs
		if seqs == nil {
			seqs = []int64{}
		}
		if _, err := a.log.AppendSurface(session.TypeAssistantMessage,
			session.AssistantMessage{Turn: turn, Step: step, Message: msg, Usage: res.asm.Usage(), Price: info.Model(req.Model).Price},
			session.Append(), seqs); err != nil {
			return nil, err
		}
		if fin.Kind == llm.FinishMaxTokens {
			return &session.TurnEndReason{Kind: session.ReasonMaxTokens}, nil
		}
		calls := msg.ToolCalls()
		if len(calls) == 0 {
			return &session.TurnEndReason{Kind: session.ReasonCompleted}, nil
		}
		out, err := a.runTools(ctx, turn, step, calls)
		if err != nil {
			return nil, err
		}
		if out.Aborted || ctx.Err() != nil {
			return nil, context.Canceled
		}
		if out.Concluded {
			return &session.TurnEndReason{Kind: session.ReasonCompleted}, nil
		}
		return nil, nil
	}
}

func (a *Agent) observeRequest(ctx context.Context, provider string, res *streamResult, took time.Duration) {
	var code llm.Code
	if ctx.Err() != nil {
		code = llm.CodeAborted
	} else if fin := res.asm.Finish(); fin.Kind == llm.FinishError || fin.Kind == llm.FinishAborted {
		code = llm.CodeUnknown
		if fin.Failure != nil {
			code = fin.Failure.Code
		}
	}
	a.m.opts.Observer.RequestDone(provider, code, took)
}

// streamResult is one attempt's assembled stream and its chunk seqs.
type streamResult struct {
	route llm.CallConfig
	asm   *llm.Assembler
	seqs  []int64
}

// stream runs one attempt: every chunk is logged as assistant/chunk before
// it is assembled; after a cancel no further chunk is logged.
func (a *Agent) stream(ctx context.Context, turn, step int, prov llm.Provider, req llm.Request) (*streamResult, error) {
	res := &streamResult{route: req.CallConfig, asm: &llm.Assembler{}}
	var appendErr error
	emit := func(c llm.Chunk) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		ev, err := a.log.Append(session.TypeAssistantChunk, session.AssistantChunk{Turn: turn, Step: step, Chunk: c})
		if err != nil {
			appendErr = err
			return err
		}
		res.seqs = append(res.seqs, ev.Seq)
		res.asm.Add(c)
		return nil
	}
	hooks := snapshot(a.m.hooks, &a.hooks, func(h *Hooks) []entry[StreamHook] { return h.stream })
	err := runStream(ctx, hooks, req, emit, func(ctx context.Context, req llm.Request, emit llm.Emit) error {
		return llm.Run(ctx, prov, req, emit)
	})
	if appendErr != nil {
		return nil, appendErr
	}
	if err != nil && ctx.Err() == nil {
		// A stream hook failed (the provider's own failures arrive as a
		// finish chunk).
		return nil, err
	}
	return res, nil
}

// finalizeInterrupted keeps the visible prefix of a cancelled stream as an
// interrupted assistant message, so the next request replays exactly what
// the user saw (never a half tool call).
func (a *Agent) finalizeInterrupted(turn, step int, res *streamResult) {
	if res == nil || !res.asm.HasVisible() {
		return
	}
	msg := llm.Message{
		ID:      llm.NewID(),
		Role:    llm.RoleAssistant,
		Content: res.asm.Interrupted(),
		Source:  llm.Source{Kind: llm.SourceModel, Provider: res.route.Provider, Model: res.route.Model},
	}
	if _, err := a.log.AppendSurface(session.TypeAssistantMessage,
		session.AssistantMessage{Turn: turn, Step: step, Message: msg, Usage: res.asm.Usage(), Interrupted: true},
		session.Append(), res.seqs); err != nil {
		a.reportError(turn, step, err)
	}
}

// requestError runs agent/request-error; the default (innermost) decision
// applies the provider's retry policy with llm/retry events.
func (a *Agent) requestError(ctx context.Context, turn, step int, info llm.ProviderInfo, f *llm.Failure) (RequestErrorDecision, error) {
	p := &RequestErrorPayload{Agent: a, Turn: turn, Step: step, Provider: info.Name, Failure: f, Retry: info.Retry}
	hooks := snapshot(a.m.hooks, &a.hooks, func(h *Hooks) []entry[RequestErrorHook] { return h.requestError })
	return waterfall(ctx, "agent/request-error", hooks, p, func(ctx context.Context) (RequestErrorDecision, error) {
		return a.retryWithPolicy(ctx, p)
	})
}

// retryWithPolicy is the default request-error decision. The budget is
// counted per (turn, step, provider, policy key) from the llm/retry events
// already in the log (upstream §5.5), so a retry granted by another
// recovery (overflow compaction) does not spend it, and the count survives
// anything that re-enters the step.
func (a *Agent) retryWithPolicy(ctx context.Context, p *RequestErrorPayload) (RequestErrorDecision, error) {
	key := p.Retry.PolicyKey()
	retry := a.retriesSpent(p.Turn, p.Step, p.Provider, key) + 1
	delay, ok := p.Retry.Decide(retry, p.Failure, a.m.rand)
	if !ok {
		return RequestErrorDecision{}, nil
	}
	mode := p.Retry.ModeName()
	ev := session.LLMRetry{
		RetryID: llm.NewID(), Turn: p.Turn, Step: p.Step, Provider: p.Provider, Mode: string(mode), PolicyKey: key,
		Retry: retry, DelayMs: delay.Milliseconds(), Failure: *p.Failure,
	}
	if mode == llm.RetryNormal {
		ev.MaxRetries = p.Retry.MaxRetries
	}
	if _, err := a.log.Append(session.TypeLLMRetry, ev); err != nil {
		return RequestErrorDecision{}, err
	}
	if err := a.m.store.Flush(ctx, a.id); err != nil && ctx.Err() == nil {
		a.logger.Warn("flush before retry wait", "session", a.id, "err", err)
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return RequestErrorDecision{}, ctx.Err()
	case <-t.C:
	}
	if _, err := a.log.Append(session.TypeLLMRetryStarted, session.LLMRetryStarted{RetryID: ev.RetryID, Turn: p.Turn, Step: p.Step, Retry: retry}); err != nil {
		return RequestErrorDecision{}, err
	}
	return RequestErrorDecision{Retry: true}, nil
}

// retriesSpent counts the llm/retry events of (turn, step, provider, key),
// reading back to the turn's start.
func (a *Agent) retriesSpent(turn, step int, provider, key string) int {
	n := 0
	for seq := a.log.Len() - 1; seq >= 0; seq-- {
		ev, ok := a.log.Event(seq)
		if !ok || ev.Type == session.TypeTurnStart {
			break
		}
		if ev.Type != session.TypeLLMRetry {
			continue
		}
		r, err := session.Decode[session.LLMRetry](ev)
		if err != nil || r.Turn != turn || r.Step != step || r.Provider != provider {
			continue
		}
		if r.PolicyKey == key || r.PolicyKey == "" && r.Mode == key {
			n++
		}
	}
	return n
}

// runTools runs the step's tool calls through the tools pipeline.
func (a *Agent) runTools(ctx context.Context, turn, step int, calls []llm.ContentBlock) (tools.Outcome, error) {
	p := &tools.Pipeline{
		Scope:       a.scope,
		Pre:         []tools.PreHook{tools.PermissionHook()},
		MaxParallel: a.m.opts.MaxParallelTools,
	}
	if caps := a.m.opts.Caps; caps != nil {
		p.Around = append([]tools.ExecuteHook{caps(a.sandbox, a.workspace)}, p.Around...)
	}
	if gate := a.workspaceGate(ctx); gate != nil {
		p.Around = append([]tools.ExecuteHook{gate}, p.Around...)
	}
	return p.Run(ctx, calls, turn, step, &toolEnv{a: a, turn: turn, step: step}, &toolSink{a: a, turn: turn, step: step})
}
