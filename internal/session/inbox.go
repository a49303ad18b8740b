package session

import "harness/internal/llm"

// Inbox is the durable inbox projection (§2.3, §1.8): it replays the
// agent/inbox/spliced events with seq >= seedLength, so a forked child does
// not inherit its parent's queue while a resumed session recovers its own.
// It returns the two lists in order, as new slices.
func Inbox(events []Event, seedLength int64) (nextTurn, nextStep []llm.Message, err error) {
	for _, ev := range events {
		if ev.Seq < seedLength || ev.Type != TypeInboxSpliced {
			continue
		}
		s, err := Decode[InboxSpliced](ev)
		if err != nil {
			return nil, nil, errorf(CodeInvalidData, "seq %d (%s): %v", ev.Seq, ev.Type, err)
		}
		list, other := &nextTurn, nextStep
		if s.Target == TargetNextStep {
			list, other = &nextStep, nextTurn
		}
		next, err := ApplySplice(*list, s)
		if err != nil {
			return nil, nil, atEvent(ev, err)
		}
		if id, dup := firstShared(s.Inserted, other); dup {
			return nil, nil, atEvent(ev, errorf(CodeInvalidSplice, "message id %s is already queued in the other list", id))
		}
		*list = next
	}
	return nextTurn, nextStep, nil
}

// ApplySplice applies one normalized splice with JS splice semantics: remove
// RemovedCount items at Start, insert Inserted there. Start must be within
// [0, len], RemovedCount within [0, len-Start], every inserted item a valid
// user message, and the result free of duplicate message ids. list is not
// modified; the result is a new slice.
func ApplySplice(list []llm.Message, s InboxSpliced) ([]llm.Message, error) {
	if s.Target != TargetNextTurn && s.Target != TargetNextStep {
		return nil, errorf(CodeInvalidSplice, "unknown inbox target %q", s.Target)
	}
	if s.Outcome != "" && s.Outcome != OutcomeCanceled && s.Outcome != OutcomeNotStored {
		return nil, errorf(CodeInvalidSplice, "unknown splice outcome %q", s.Outcome)
	}
	n := len(list)
	if s.Start < 0 || s.Start > n {
		return nil, errorf(CodeInvalidSplice, "splice start %d is outside [0, %d] of %s", s.Start, n, s.Target)
	}
	if s.RemovedCount < 0 || s.RemovedCount > n-s.Start {
		return nil, errorf(CodeInvalidSplice, "splice removes %d of the %d items after %d in %s", s.RemovedCount, n-s.Start, s.Start, s.Target)
	}
	for _, m := range s.Inserted {
		if err := checkMessage(m, llm.RoleUser); err != nil {
			return nil, errorf(CodeInvalidSplice, "inserted %v", err)
		}
	}
	out := make([]llm.Message, 0, n-s.RemovedCount+len(s.Inserted))
	out = append(out, list[:s.Start]...)
	out = append(out, s.Inserted...)
	out = append(out, list[s.Start+s.RemovedCount:]...)
	seen := make(map[string]bool, len(out))
	for _, m := range out {
		if seen[m.ID] {
			return nil, errorf(CodeInvalidSplice, "duplicate message id %s in %s", m.ID, s.Target)
		}
		seen[m.ID] = true
	}
	return out, nil
}

// firstShared returns the first id of inserted that is also in list.
func firstShared(inserted, list []llm.Message) (string, bool) {
	for _, m := range inserted {
		for _, o := range list {
			if m.ID == o.ID {
				return m.ID, true
			}
		}
	}
	return "", false
}
