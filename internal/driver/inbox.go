package driver

import (
	"fmt"

	"harness/internal/llm"
	"harness/internal/session"
)

// The inbox is two durable ordered lists. Every mutation is logged as one
// agent/inbox/spliced event before the in-memory lists change, so the log
// alone rebuilds the inbox after a restart (session.Inbox).

func (a *Agent) listLocked(t session.InboxTarget) *[]llm.Message {
	if t == session.TargetNextStep {
		return &a.nextStep
	}
	return &a.nextTurn
}

// spliceLocked logs and applies one splice on one list.
func (a *Agent) spliceLocked(t session.InboxTarget, start, remove int, insert []llm.Message, outcome string) error {
	if insert == nil {
		insert = []llm.Message{}
	}
	ev := session.InboxSpliced{Target: t, Start: start, RemovedCount: remove, Inserted: insert, Outcome: outcome}
	list := a.listLocked(t)
	next, err := session.ApplySplice(*list, ev)
	if err != nil {
		return fmt.Errorf("inbox splice: %w", err)
	}
	if _, err := a.appendLocked(session.TypeInboxSpliced, ev); err != nil {
		return fmt.Errorf("inbox splice: %w", err)
	}
	*list = next
	return nil
}

// claimLocked takes the input of a step: at a turn boundary every next-step
// item then the first next-turn item (pending context precedes the prompt);
// between steps only next-step items. Claims are pure deletions.
func (a *Agent) claimLocked(target session.InboxTarget, turn int) []llm.Message {
	var claimed []llm.Message
	if n := len(a.nextStep); n > 0 {
		msgs := cloneMsgs(a.nextStep)
		if err := a.spliceLocked(session.TargetNextStep, 0, n, nil, ""); err != nil {
			a.logger.Error("claim next-step", "session", a.id, "err", err)
		} else {
			claimed = append(claimed, msgs...)
		}
	}
	if target == session.TargetNextTurn && len(a.nextTurn) > 0 {
		msg := a.nextTurn[0]
		if err := a.spliceLocked(session.TargetNextTurn, 0, 1, nil, ""); err != nil {
			a.logger.Error("claim next-turn", "session", a.id, "err", err)
		} else {
			claimed = append(claimed, msg)
		}
	}
	for i := range claimed {
		a.publishLocked(LiveEvent{Kind: LiveClaimed, Message: &claimed[i], Turn: turn})
	}
	if len(claimed) > 0 {
		a.publishQueueLocked()
	}
	return claimed
}

// clearLocked removes everything pending (next-step first, then next-turn)
// as canceled splices.
func (a *Agent) clearLocked() {
	changed := false
	for _, t := range []session.InboxTarget{session.TargetNextStep, session.TargetNextTurn} {
		list := a.listLocked(t)
		if len(*list) == 0 {
			continue
		}
		removed := cloneMsgs(*list)
		if err := a.spliceLocked(t, 0, len(removed), nil, session.OutcomeCanceled); err != nil {
			a.logger.Error("clear inbox", "session", a.id, "err", err)
			continue
		}
		changed = true
		for i := range removed {
			a.publishLocked(LiveEvent{Kind: LiveDiscarded, Message: &removed[i]})
		}
	}
	if changed {
		a.publishQueueLocked()
	}
}

func (a *Agent) findLocked(id string) (session.InboxTarget, int) {
	for i, m := range a.nextTurn {
		if m.ID == id {
			return session.TargetNextTurn, i
		}
	}
	for i, m := range a.nextStep {
		if m.ID == id {
			return session.TargetNextStep, i
		}
	}
	return "", -1
}

func (a *Agent) hasPendingLocked(id string) bool {
	_, i := a.findLocked(id)
	return i >= 0
}

func (a *Agent) pendingLocked() bool { return len(a.nextTurn)+len(a.nextStep) > 0 }

// appendContexts queues tool additional contexts for the next step (durable,
// not waking: the running turn takes them at its next step).
func (a *Agent) appendContexts(msgs []llm.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, m := range msgs {
		if a.hasPendingLocked(m.ID) {
			m.ID = llm.NewID()
		}
		if err := a.spliceLocked(session.TargetNextStep, len(a.nextStep), 0, []llm.Message{m}, ""); err != nil {
			return err
		}
	}
	a.publishQueueLocked()
	return nil
}
