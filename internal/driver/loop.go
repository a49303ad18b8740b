package driver

import (
	"context"
	"errors"
	"fmt"

	"harness/internal/llm"
	"harness/internal/session"
)

// run is the driver goroutine: it drains turns while there is work, then
// flips to idle under the same lock that input takes, so input is never
// stranded between the last check and the flip.
func (a *Agent) run(act *activity) {
	for {
		reason := a.turn(act)

		a.mu.Lock()
		var more bool
		switch {
		case a.disposed:
		case reason.Kind == session.ReasonCompleted || reason.Kind == session.ReasonMaxTokens:
			more = a.pendingLocked()
		case reason.Kind == session.ReasonAborted && reason.Cause != nil && reason.Cause.Kind == session.CauseDisposed:
		default:
			// blocked, error, aborted: go on only for input that asked to
			// wake after this turn began.
			more = a.wake && a.pendingLocked()
		}
		act.cancel(nil)
		if more {
			a.act = newActivity(a.m.baseCtx)
			a.wake = false
			act = a.act
			a.mu.Unlock()
			continue
		}
		a.status = StatusIdle
		a.act = nil
		a.wake = false
		a.publishLocked(LiveEvent{Kind: LiveStatus, Status: StatusIdle})
		close(a.idleCh)
		a.idleCh = nil
		a.mu.Unlock()
		a.m.agentIdle(a)
		return
	}
}

// turnResult is how a step (or the turn) ended; nil from step means the
// tools owe the model another request.
type stepOutcome = *session.TurnEndReason

// turn runs one turn and returns its end reason, which it has logged.
func (a *Agent) turn(act *activity) (reason session.TurnEndReason) {
	ctx := act.ctx
	turnNo := a.log.State().LastTurn + 1
	if _, err := a.log.Append(session.TypeTurnStart, session.TurnStart{Turn: turnNo}); err != nil {
		a.reportError(turnNo, 0, err)
		return session.TurnEndReason{Kind: session.ReasonError, Error: failureOf(err)}
	}
	a.mu.Lock()
	a.wake = false
	a.mu.Unlock()

	step := 0
	defer func() {
		if r := recover(); r != nil {
			err := fmt.Errorf("driver panic: %v", r)
			a.logger.Error("turn panicked", "session", a.id, "turn", turnNo, "panic", r)
			reason = session.TurnEndReason{Kind: session.ReasonError, Error: failureOf(err)}
		}
		a.withdrawInteractions(turnNo)
		a.closeOpenStep(turnNo)
		if _, err := a.log.Append(session.TypeTurnEnd, session.TurnEnd{Turn: turnNo, Reason: reason}); err != nil {
			a.reportError(turnNo, step, err)
		}
		a.m.opts.Observer.TurnEnded(reason.Kind)
		if err := a.m.store.Flush(context.WithoutCancel(ctx), a.id); err != nil {
			a.reportError(turnNo, step, fmt.Errorf("flush at turn end: %w", err))
		}
	}()

	var ends *session.TurnEndReason
	target := session.TargetNextTurn
	for {
		if ctx.Err() != nil {
			return a.abortReason(act)
		}
		a.mu.Lock()
		claimed := a.claimLocked(target, turnNo)
		a.mu.Unlock()

		asm, err := a.assemble(ctx)
		if err != nil {
			return a.failReason(act, turnNo, step, err)
		}
		if ctx.Err() != nil {
			return a.abortReason(act)
		}
		decision, err := a.preStep(ctx, turnNo, step+1, claimed, asm, step > 0 && ends == nil)
		if err != nil {
			return a.failReason(act, turnNo, step, err)
		}
		if ctx.Err() != nil {
			return a.abortReason(act)
		}
		if decision.Reject {
			return session.TurnEndReason{Kind: session.ReasonBlocked}
		}
		if ends != nil && len(decision.Messages) == 0 {
			return *ends
		}
		if step == 0 && len(decision.Messages) == 0 {
			return session.TurnEndReason{Kind: session.ReasonCompleted}
		}

		step++
		if _, err := a.log.Append(session.TypeStepStart, session.StepBoundary{Turn: turnNo, Step: step}); err != nil {
			return a.failReason(act, turnNo, step, err)
		}
		a.setStepOpen(true)
		for _, m := range decision.Messages {
			if _, err := a.log.AppendSurface(session.TypeUserMessage, m, session.Append(), nil); err != nil {
				return a.failReason(act, turnNo, step, err)
			}
		}
		a.maybeTitle(decision.Messages)

		out, err := a.step(ctx, act, turnNo, step, asm)
		a.closeOpenStep(turnNo)
		if err != nil {
			return a.failReason(act, turnNo, step, err)
		}
		if out != nil && (ends == nil || ends.Kind != session.ReasonMaxTokens) {
			ends = out
		}

		if ctx.Err() != nil {
			return a.abortReason(act)
		}
		if ends != nil && !a.hasNextStep() {
			stopErr := runTurnStopping(ctx, snapshot(a.m.hooks, &a.hooks, func(h *Hooks) []entry[TurnStoppingHook] { return h.turnStopping }),
				&TurnStoppingPayload{Agent: a, Turn: turnNo})
			if ctx.Err() != nil {
				return a.abortReason(act)
			}
			if stopErr != nil {
				return a.failReason(act, turnNo, step, stopErr)
			}
		}
		if ends != nil && !a.hasNextStep() {
			return *ends
		}
		target = session.TargetNextStep
	}
}

func (a *Agent) hasNextStep() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.nextStep) > 0
}

// stepOpen tracks whether this driver has an open step to close; it is only
// touched by the driver goroutine.
func (a *Agent) setStepOpen(open bool) { a.stepOpen = open }

// closeOpenStep appends step/end if the current step is still open.
func (a *Agent) closeOpenStep(turn int) {
	if !a.stepOpen {
		return
	}
	a.stepOpen = false
	st := a.log.State()
	if _, err := a.log.Append(session.TypeStepEnd, session.StepBoundary{Turn: turn, Step: st.Step}); err != nil {
		a.reportError(turn, st.Step, err)
	}
}

// abortReason is the end reason of an aborted turn.
func (a *Agent) abortReason(act *activity) session.TurnEndReason {
	cause := session.CancelCause{Kind: session.CauseUser}
	var ce *cancelError
	if errors.As(context.Cause(act.ctx), &ce) {
		cause = ce.cause
	}
	return session.TurnEndReason{Kind: session.ReasonAborted, Cause: &cause}
}

// failReason turns an error into the turn's end reason: aborted when the
// activity was cancelled, else error with the structured failure.
func (a *Agent) failReason(act *activity, turn, step int, err error) session.TurnEndReason {
	if act.ctx.Err() != nil {
		return a.abortReason(act)
	}
	a.reportError(turn, step, err)
	return session.TurnEndReason{Kind: session.ReasonError, Error: failureOf(err)}
}

func (a *Agent) reportError(turn, step int, err error) {
	f := failureOf(err)
	a.logger.Warn("turn failed", "session", a.id, "turn", turn, "step", step, "code", f.Code, "err", err)
	a.mu.Lock()
	a.publishLocked(LiveEvent{Kind: LiveError, Turn: turn, Error: f})
	a.mu.Unlock()
}

// failureOf converts any error into the durable failure shape.
func failureOf(err error) *llm.Failure {
	f := llm.AsFailure(err)
	var he *HookError
	if errors.As(err, &he) {
		f = &llm.Failure{Code: CodeHookFailed, Message: he.Error()}
	}
	return f
}

// Driver failure codes (beyond the provider codes in llm).
const (
	CodeHookFailed       llm.Code = "HOOK_FAILED"
	CodeRequestInvariant llm.Code = "REQUEST_INVARIANT"
	CodePersistence      llm.Code = "PERSISTENCE"
	CodePrompt           llm.Code = "PROMPT"
)
