package session

import (
	"fmt"

	"harness/internal/llm"
)

// Draft is an event not yet appended: what RepairClosers proposes.
type Draft struct {
	Type            Type       `json:"type"`
	Data            any        `json:"data"`
	SurfaceOp       *SurfaceOp `json:"surfaceOp,omitempty"`
	SourceEventSeqs []int64    `json:"sourceEventSeqs,omitzero"`
}

// InterruptedToolError is the error name of synthetic crash-repair results.
const InterruptedToolError = "InterruptedToolError"

// Texts the model reads in synthetic crash-repair results.
const (
	textOutcomeUnknown = "Error: the session was interrupted while this tool call was running, so its outcome is unknown. " +
		"Retry it only if it is idempotent; otherwise verify the current state before acting on it."
	textNotStarted = "Error: the session was interrupted before this tool call started, so it never ran. " +
		"Retry it if it is still needed."
)

// RepairClosers returns the deterministic closers of §1.8 for a log that ends
// inside an open turn or an open compaction bracket, in append order:
// approval/decided and question/answered {cancelled} for every interaction
// of the open turn still pending (nobody can answer it any more), a
// compaction/end for every compaction/start without one
// (compactionClosers), a synthetic tool/result for every
// tool-call block of an assistant/message in the still-open step that has no
// tool/result (TOOL_OUTCOME_UNKNOWN citing its tool/call when one was logged,
// else TOOL_NOT_STARTED), then step/end if a step is open, then
// turn/end{interrupted}. A balanced log gets none. Each synthetic message id
// is interrupted-tool-result-<callId>-<seq>, seq being the result's own seq
// when the drafts are appended in order right after events.
func RepairClosers(events []Event) []Draft {
	var (
		turnOpen, stepOpen bool
		turn, step         int
		calls              []string         // tool-call block ids of the open step, model order
		started            map[string]int64 // tool/call seq by callId in the open step
		finished           map[string]bool  // callIds with a tool/result in the open step
		approvals          []string         // approval ids asked in the open turn, not decided
		questions          []string         // question ids asked in the open turn, not answered
	)
	resetStep := func() {
		calls, started, finished = nil, map[string]int64{}, map[string]bool{}
	}
	resetStep()
	for _, ev := range events {
		switch ev.Type {
		case TypeTurnStart:
			if v, err := Decode[TurnStart](ev); err == nil {
				turnOpen, stepOpen, turn = true, false, v.Turn
				resetStep()
				approvals, questions = nil, nil
			}
		case TypeTurnEnd:
			turnOpen, stepOpen = false, false
			resetStep()
			approvals, questions = nil, nil
		case TypeApprovalAsked:
			if v, err := Decode[ApprovalAsked](ev); err == nil && turnOpen {
				approvals = append(approvals, v.ID)
			}
		case TypeApprovalDecided:
			if v, err := Decode[ApprovalDecided](ev); err == nil {
				approvals = removeID(approvals, v.ID)
			}
		case TypeQuestionAsked:
			if v, err := Decode[QuestionAsked](ev); err == nil && turnOpen {
				questions = append(questions, v.ID)
			}
		case TypeQuestionAnswered:
			if v, err := Decode[QuestionAnswered](ev); err == nil {
				questions = removeID(questions, v.ID)
			}
		case TypeStepStart:
			if v, err := Decode[StepBoundary](ev); err == nil {
				stepOpen, step = true, v.Step
				resetStep()
			}
		case TypeStepEnd:
			stepOpen = false
			resetStep()
		case TypeAssistantMessage:
			if v, err := Decode[AssistantMessage](ev); err == nil && stepOpen {
				for _, b := range v.Message.ToolCalls() {
					calls = append(calls, b.ID)
				}
			}
		case TypeToolCall:
			if v, err := Decode[ToolCall](ev); err == nil && stepOpen {
				started[v.CallID] = ev.Seq
			}
		case TypeToolResult:
			if v, err := Decode[ToolResult](ev); err == nil && stepOpen {
				finished[v.Message.Source.CallID] = true
			}
		}
	}
	brackets := compactionClosers(events)
	if !turnOpen {
		return brackets
	}
	next := int64(len(events))
	if len(events) > 0 {
		next = events[len(events)-1].Seq + 1
	}
	// Pending approvals and questions of the dead turn are withdrawn first:
	// nobody can answer them any more.
	var drafts []Draft
	for _, id := range approvals {
		drafts = append(drafts, Draft{Type: TypeApprovalDecided, Data: ApprovalDecided{ID: id, Outcome: ApprovalCancelled}})
	}
	for _, id := range questions {
		drafts = append(drafts, Draft{Type: TypeQuestionAnswered, Data: QuestionAnswered{ID: id, Outcome: QuestionCancelled}})
	}
	// A compaction inside the turn ran before its step (pressure) or in it
	// (overflow): its end goes before the step and the turn close.
	drafts = append(drafts, brackets...)
	if stepOpen {
		for _, callID := range calls {
			if finished[callID] {
				continue
			}
			finished[callID] = true // a repeated call id gets one result
			seq := next + int64(len(drafts))
			code, text, sources := CodeToolNotStarted, textNotStarted, []int64(nil)
			if callSeq, ok := started[callID]; ok {
				code, text, sources = CodeToolOutcomeUnknown, textOutcomeUnknown, []int64{callSeq}
			}
			id := fmt.Sprintf("interrupted-tool-result-%s-%d", callID, seq)
			drafts = append(drafts, Draft{
				Type: TypeToolResult,
				Data: ToolResult{
					Turn: turn, Step: step,
					Message: llm.ToolResultMessage(id, callID, []llm.ContentBlock{llm.Text(text)}, true),
					Error:   &ToolError{Name: InterruptedToolError, Code: code},
				},
				SurfaceOp:       Append(),
				SourceEventSeqs: sources,
			})
		}
		drafts = append(drafts, Draft{Type: TypeStepEnd, Data: StepBoundary{Turn: turn, Step: step}})
	}
	return append(drafts, Draft{Type: TypeTurnEnd, Data: TurnEnd{Turn: turn, Reason: TurnEndReason{Kind: ReasonInterrupted}}})
}

// Repair applies RepairClosers once: the closers are appended (through the
// Sink and to subscribers) with the last event's time. It returns the
// appended events, nil when the log was balanced, so a second call appends
// nothing. Closers are built from validated events and are not expected to
// fail; if one did, those before it stay appended and are returned too.
func (l *Log) Repair() ([]Event, error) {
	l.mu.Lock()
	events := make([]Event, len(l.records))
	for i, r := range l.records {
		events[i] = r.ev
	}
	drafts := RepairClosers(events)
	if len(drafts) == 0 {
		l.mu.Unlock()
		return nil, nil
	}
	at := events[len(events)-1].Time
	out := make([]Event, 0, len(drafts))
	for _, d := range drafts {
		raw, err := encodeData(d.Data)
		if err == nil {
			ev := Event{Seq: int64(len(l.records)), Time: at, Type: d.Type, Data: raw, SurfaceOp: d.SurfaceOp, SourceEventSeqs: d.SourceEventSeqs}
			var a admitted
			if a, err = l.admit(ev, true); err == nil {
				l.apply(a)
				out = append(out, a.ev.clone())
				continue
			}
		}
		l.publishAndUnlock()
		return out, fmt.Errorf("repair: %w", err)
	}
	l.publishAndUnlock()
	return out, nil
}

func removeID(ids []string, id string) []string {
	for i, x := range ids {
		if x == id {
			return append(ids[:i:i], ids[i+1:]...)
		}
	}
	return ids
}
