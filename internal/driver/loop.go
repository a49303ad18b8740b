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
// stranded between the last check and the flip. op is its first turn,
// opened by the waking call (startLocked).
//
// After a turn that closed normally (completed, max-tokens) the driver goes
// on while anything is pending. After a turn that was cancelled, blocked or
// failed it stops, and pending input stays parked until the next waking
// input, unless a wake was latched while the turn was aborting (upstream
// §2.5, §3.2; docs/lifecycle.md "Stop, the paused queue and the wake latch").
func (a *Agent) run(act *activity, op openedTurn) {
	for {
		reason := a.turn(act, op)

		a.mu.Lock()
		var more bool
		switch {
		case a.disposed, a.drainingLocked():
			// The queue waits for the session's next owner.
		case act.cause != nil:
			// Cancelled (Stop), even when the turn closed normally just
			// before the cancel was seen: only a latched wake goes on.
			more = a.wake && act.cause.Kind != session.CauseDisposed && a.pendingLocked()
		case reason.Kind == session.ReasonCompleted || reason.Kind == session.ReasonMaxTokens:
			more = a.pendingLocked()
		default:
			// blocked, error: the queue is parked until the next wake.
			more = a.wake && a.pendingLocked()
		}
		act.cancel(nil)
		if more {
			a.act = newActivity(a.m.baseCtx)
			a.wake = false
			act = a.act
			op = a.openTurnLocked()
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

// openedTurn is a turn opened under the agent's lock: turn/start logged and
// the turn's first claim taken.
type openedTurn struct {
	turn    int
	claimed []llm.Message
	err     error // turn/start could not be logged: there is no turn
}

// openTurnLocked opens the next turn: turn/start, then the claim at the
// turn boundary (every next-step item, then the first next-turn item). A
// waking send while idle does this before it returns (upstream §2.4), so
// the log already holds turn/start and the claim when Followup or Steer
// returns.
func (a *Agent) openTurnLocked() openedTurn {
	n := a.log.State().LastTurn + 1
	if _, err := a.appendLocked(session.TypeTurnStart, session.TurnStart{Turn: n}); err != nil {
		return openedTurn{turn: n, err: err}
	}
	return openedTurn{turn: n, claimed: a.claimLocked(session.TargetNextTurn, n)}
}

// turnResult is how a step (or the turn) ended; nil from step means the
// tools owe the model another request.
type stepOutcome = *session.TurnEndReason

// turn runs one opened turn and returns its end reason, which it has
// logged.
func (a *Agent) turn(act *activity, op openedTurn) (reason session.TurnEndReason) {
	ctx := act.ctx
	turnNo := op.turn
	if op.err != nil {
		a.reportError(turnNo, 0, op.err)
		return session.TurnEndReason{Kind: session.ReasonError, Error: failureOf(op.err)}
	}

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
		// Not the turn's context, which a stop cancels: the manager's
		// root, which only an abandoned shutdown cancels.
		if err := a.m.store.Flush(a.m.baseCtx, a.id); err != nil {
			// The turn ended; its events wait in the writer (a full disk,
			// a lock another process holds) and are stored once it takes
			// writes. Viewers are told so, as a persistence failure.
			a.reportError(turnNo, step, &llm.Failure{Code: CodePersistence, Message: fmt.Sprintf("turn ended but not stored yet: %v", err)})
		}
	}()

	// ends is the outcome of the last step: nil while tools owe the model a
	// request. maxTokens is sticky for the turn's reason (upstream §3.4) but
	// does not stop a continuation the tools of a later step are owed
	// (docs/lifecycle.md "Max-tokens and owed tool results").
	var ends *session.TurnEndReason
	maxTokens := false
	final := func() session.TurnEndReason {
		if maxTokens {
			return session.TurnEndReason{Kind: session.ReasonMaxTokens}
		}
		return *ends
	}
	target := session.TargetNextTurn
	claimed := op.claimed
	for first := true; ; first = false {
		if !first {
			if ctx.Err() != nil {
				return a.abortReason(act)
			}
			a.mu.Lock()
			claimed = a.claimLocked(target, turnNo)
			a.mu.Unlock()
		}

		asm, err := a.assemble(ctx)
		if err != nil {
			return a.failReason(act, turnNo, step, err)
		}
		if ctx.Err() != nil {
			return a.abortReason(act)
		}
		decision, err := a.preStep(ctx, turnNo, step+1, claimed, asm)
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
			return final()
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
		// The step's outcome replaces the turn's end reason (upstream §3.2 g):
		// a tools step (nil) clears an earlier "completed", so the model gets
		// a continuation step to read the results.
		ends = out
		if out != nil && out.Kind == session.ReasonMaxTokens {
			maxTokens = true
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
			return final()
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
