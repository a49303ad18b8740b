package driver

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"harness/internal/llm"
	"harness/internal/session"
	"harness/internal/tools"
)

// Approvals and questions are durable pending records: an *asked event opens
// one, exactly one *decided/*answered event closes it. Any connected client
// may answer; the first answer wins; a turn that ends or is cancelled
// withdraws what is still pending (outcome cancelled). After a crash, repair
// closes the records of the interrupted turn.

// ErrBadDecision: an approval decision other than allowed-once,
// allowed-session or rejected, or a revocation without a tool.
var ErrBadDecision = errors.New("invalid approval decision")

type pendingInteraction struct {
	info  Interaction
	reply chan interactionReply // buffered(1): the winner's answer
}

type interactionReply struct {
	cancelled bool
	approval  session.ApprovalOutcome
	answers   []session.Answer
	by        *session.Actor
}

// PendingInteractions lists the open approvals and questions, oldest first.
func (a *Agent) PendingInteractions() []Interaction {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]Interaction, 0, len(a.pending))
	for _, p := range a.pending {
		out = append(out, p.info)
	}
	slices.SortFunc(out, func(x, y Interaction) int { return x.Turn - y.Turn })
	return out
}

// requestApproval asks the session's people about a call. A tool allowed
// for the session (an earlier allowed-session decision not revoked since,
// folded from the log) runs without a prompt and without approval events:
// the log already says why, so the allowed set at any seq is derivable and
// no pending record is opened that no one will answer.
//
// With no approval service (Options.NoApprovals) the call is denied as
// unavailable and nothing is logged; under the approval policy "never"
// (the last approval/policy event) it is rejected without asking anyone,
// with the audit pair asked + decided{rejected} (upstream §4.6).
func (a *Agent) requestApproval(ctx context.Context, turn int, call *tools.Call, reason string, preview *session.ApprovalPreview) session.ApprovalOutcome {
	if a.log.State().ToolAllowed(call.Name) {
		return session.ApprovalAllowedSession
	}
	if a.m.opts.NoApprovals {
		return session.ApprovalUnavailable
	}
	id := llm.NewID()
	if approvalPolicy(a.log) == session.ApprovalPolicyNever {
		a.mu.Lock()
		defer a.mu.Unlock()
		if _, err := a.appendLocked(session.TypeApprovalAsked, session.ApprovalAsked{ID: id, ToolName: call.Name, CallID: call.ID, Reason: reason, Preview: preview}); err != nil {
			return session.ApprovalUnavailable
		}
		if _, err := a.appendLocked(session.TypeApprovalDecided, session.ApprovalDecided{ID: id, Outcome: session.ApprovalRejected}); err != nil {
			a.logger.Error("close approval", "session", a.id, "id", id, "err", err)
		}
		return session.ApprovalRejected
	}
	info := Interaction{ID: id, Kind: KindApproval, Turn: turn, CallID: call.ID, ToolName: call.Name, Arguments: call.RawArguments, Reason: reason, Preview: preview}
	reply, err := a.openInteraction(ctx, info, session.TypeApprovalAsked, session.ApprovalAsked{ID: id, ToolName: call.Name, CallID: call.ID, Reason: reason, Preview: preview})
	if err != nil {
		return session.ApprovalUnavailable
	}
	if reply == nil {
		return session.ApprovalCancelled
	}
	return reply.approval
}

func (a *Agent) askQuestions(ctx context.Context, turn int, call *tools.Call, qs []session.Question) ([]session.Answer, error) {
	if len(qs) == 0 {
		return nil, fmt.Errorf("no questions to ask")
	}
	id := llm.NewID()
	info := Interaction{ID: id, Kind: KindQuestion, Turn: turn, CallID: call.ID, ToolName: call.Name, Questions: qs}
	reply, err := a.openInteraction(ctx, info, session.TypeQuestionAsked, session.QuestionAsked{ID: id, CallID: call.ID, Questions: qs})
	if err != nil {
		return nil, err
	}
	if reply == nil || reply.cancelled {
		return nil, fmt.Errorf("question withdrawn before an answer")
	}
	return reply.answers, nil
}

// openInteraction logs the asked event, publishes it, and waits for the
// first answer; on cancellation it withdraws the record (nil reply).
func (a *Agent) openInteraction(ctx context.Context, info Interaction, t session.Type, asked any) (*interactionReply, error) {
	p := &pendingInteraction{info: info, reply: make(chan interactionReply, 1)}
	a.mu.Lock()
	if _, err := a.appendLocked(t, asked); err != nil {
		a.mu.Unlock()
		return nil, err
	}
	if a.pending == nil {
		a.pending = map[string]*pendingInteraction{}
	}
	a.pending[info.ID] = p
	a.publishLocked(LiveEvent{Kind: LiveInteractionRequested, Interaction: &info})
	a.mu.Unlock()
	if err := a.m.store.Flush(ctx, a.id); err != nil && ctx.Err() == nil {
		a.logger.Warn("flush interaction", "session", a.id, "err", err)
	}

	select {
	case r := <-p.reply:
		return &r, nil
	case <-ctx.Done():
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, still := a.pending[info.ID]; !still {
		// An answer won the race with the cancel.
		r := <-p.reply
		return &r, nil
	}
	a.closeLocked(p, interactionReply{approval: session.ApprovalCancelled}, string(session.ApprovalCancelled))
	return nil, nil
}

// closeLocked logs the closing event of p, removes it and publishes.
func (a *Agent) closeLocked(p *pendingInteraction, r interactionReply, outcome string) {
	delete(a.pending, p.info.ID)
	var err error
	switch p.info.Kind {
	case KindApproval:
		d := session.ApprovalDecided{ID: p.info.ID, Outcome: session.ApprovalOutcome(outcome), By: r.by}
		if d.Outcome == session.ApprovalAllowedSession {
			d.Tool = p.info.ToolName // the scope: every later call of this tool
		}
		_, err = a.appendLocked(session.TypeApprovalDecided, d)
		if err == nil && d.Tool != "" {
			a.publishAllowedLocked()
		}
	case KindQuestion:
		qo := session.QuestionAnsweredOutcome
		if outcome == string(session.ApprovalCancelled) {
			qo = session.QuestionCancelled
		}
		_, err = a.appendLocked(session.TypeQuestionAnswered, session.QuestionAnswered{ID: p.info.ID, Outcome: qo, Answers: r.answers, By: r.by})
		outcome = string(qo)
	}
	if err != nil {
		a.logger.Error("close interaction", "session", a.id, "id", p.info.ID, "err", err)
	}
	info := p.info
	info.Outcome = outcome
	info.By = r.by
	a.publishLocked(LiveEvent{Kind: LiveInteractionResolved, Interaction: &info})
}

// Approve answers a pending approval once. allow=false rejects.
func (a *Agent) Approve(ctx context.Context, id string, allow bool, by *session.Actor) error {
	outcome := session.ApprovalRejected
	if allow {
		outcome = session.ApprovalAllowedOnce
	}
	return a.Decide(ctx, id, outcome, by)
}

// Decide answers a pending approval with allowed-once, allowed-session
// (this call and every later call of its tool in the session, until
// revoked) or rejected.
func (a *Agent) Decide(ctx context.Context, id string, outcome session.ApprovalOutcome, by *session.Actor) error {
	switch outcome {
	case session.ApprovalAllowedOnce, session.ApprovalAllowedSession, session.ApprovalRejected:
	default:
		return fmt.Errorf("%w: %q", ErrBadDecision, outcome)
	}
	a.mu.Lock()
	p, ok := a.pending[id]
	if !ok || p.info.Kind != KindApproval {
		a.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrNotPending, id)
	}
	r := interactionReply{approval: outcome, by: by}
	a.closeLocked(p, r, string(outcome))
	p.reply <- r
	a.mu.Unlock()
	return a.durable(ctx)
}

// Answer answers a pending question batch. Every question needs an answer;
// selected labels must be offered options (free text goes in Custom).
func (a *Agent) Answer(ctx context.Context, id string, answers []session.Answer, by *session.Actor) error {
	a.mu.Lock()
	p, ok := a.pending[id]
	if !ok || p.info.Kind != KindQuestion {
		a.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrNotPending, id)
	}
	if err := checkAnswers(p.info.Questions, answers); err != nil {
		a.mu.Unlock()
		return err
	}
	r := interactionReply{answers: answers, by: by}
	a.closeLocked(p, r, string(session.QuestionAnsweredOutcome))
	p.reply <- r
	a.mu.Unlock()
	return a.durable(ctx)
}

func checkAnswers(qs []session.Question, answers []session.Answer) error {
	byID := map[string]session.Answer{}
	for _, ans := range answers {
		if _, dup := byID[ans.ID]; dup {
			return fmt.Errorf("%w: question %q answered twice", ErrBadAnswer, ans.ID)
		}
		byID[ans.ID] = ans
	}
	for _, q := range qs {
		ans, ok := byID[q.ID]
		if !ok {
			return fmt.Errorf("%w: question %q has no answer", ErrBadAnswer, q.ID)
		}
		if len(ans.Selected) == 0 && ans.Custom == "" {
			return fmt.Errorf("%w: question %q: choose an option or write an answer", ErrBadAnswer, q.ID)
		}
		if len(ans.Selected) > 1 && !q.MultiSelect {
			return fmt.Errorf("%w: question %q takes one option", ErrBadAnswer, q.ID)
		}
		for _, sel := range ans.Selected {
			if !slices.ContainsFunc(q.Options, func(o session.QuestionOption) bool { return o.Label == sel }) {
				return fmt.Errorf("%w: question %q has no option %q", ErrBadAnswer, q.ID, sel)
			}
		}
		delete(byID, q.ID)
	}
	for id := range byID {
		return fmt.Errorf("%w: no question %q", ErrBadAnswer, id)
	}
	return nil
}

// withdrawInteractions cancels what is still pending for turn (the turn is
// ending).
func (a *Agent) withdrawInteractions(turn int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, p := range a.pending {
		if p.info.Turn == turn {
			r := interactionReply{approval: session.ApprovalCancelled, cancelled: true}
			a.closeLocked(p, r, string(session.ApprovalCancelled))
			p.reply <- r
		}
	}
}

// AllowedTools lists the tools allowed for the session, sorted.
func (a *Agent) AllowedTools() []string {
	return a.log.State().AllowedTools
}

// RevokeTool ends the allowed-session scope of tool: its calls need
// approval again. Revoking a tool that is not allowed changes nothing and
// logs nothing.
func (a *Agent) RevokeTool(ctx context.Context, tool string, by *session.Actor) error {
	if tool == "" {
		return fmt.Errorf("%w: no tool", ErrBadDecision)
	}
	a.mu.Lock()
	if !a.log.State().ToolAllowed(tool) {
		a.mu.Unlock()
		return nil
	}
	if _, err := a.appendLocked(session.TypeApprovalRevoked, session.ApprovalRevoked{Tool: tool, By: by}); err != nil {
		a.mu.Unlock()
		return err
	}
	a.publishAllowedLocked()
	a.mu.Unlock()
	return a.durable(ctx)
}

// publishAllowedLocked sends the allowed tools snapshot.
func (a *Agent) publishAllowedLocked() {
	a.publishLocked(LiveEvent{Kind: LiveAllowed, Tools: a.log.State().AllowedTools})
}

// approvalPolicy is the approval policy in force: the last approval/policy
// event's, else "ask".
func approvalPolicy(l *session.Log) string {
	for seq := l.Len() - 1; seq >= 0; seq-- {
		ev, ok := l.Event(seq)
		if !ok {
			break
		}
		if ev.Type != session.TypeApprovalPolicy {
			continue
		}
		if p, err := session.Decode[session.ApprovalPolicy](ev); err == nil && p.Policy != "" {
			return p.Policy
		}
		break
	}
	return session.ApprovalPolicyAsk
}
