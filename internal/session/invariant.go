package session

import "strconv"

// CheckInvariants checks the relational invariants of §1.9 over a whole log
// and returns the first violation.
func CheckInvariants(events []Event) error {
	var c Checker
	for _, ev := range events {
		if err := c.Check(ev); err != nil {
			return err
		}
	}
	return nil
}

// Checker is the incremental form of CheckInvariants: feed it every event in
// order. The zero value is ready. A violating event leaves the lifecycle
// state unchanged. Unknown (ignorable) types are skipped.
type Checker struct {
	seen     bool
	lastSeq  int64
	lastTurn int
	turnOpen bool
	turn     int
	stepOpen bool
	step     int
	nextStep int
	calls    map[string]bool // tool/call ids of the open step
}

// Check validates ev against the events seen so far and folds it in.
func (c *Checker) Check(ev Event) error {
	if c.seen && ev.Seq <= c.lastSeq {
		return errorf(CodeInvariant, "seq %d (%s): seq must increase (previous %d)", ev.Seq, ev.Type, c.lastSeq)
	}
	c.seen, c.lastSeq = true, ev.Seq
	if !KnownTypes[ev.Type] {
		return nil
	}
	if err := c.check(ev); err != nil {
		return atEvent(ev, err)
	}
	return nil
}

func violation(format string, args ...any) error { return errorf(CodeInvariant, format, args...) }

func (c *Checker) check(ev Event) error {
	switch ev.Type {
	case TypeTurnStart:
		v, err := Decode[TurnStart](ev)
		if err != nil {
			return err
		}
		if c.turnOpen {
			return violation("turn/start while turn %d is open", c.turn)
		}
		if v.Turn != c.lastTurn+1 {
			return violation("turn/start %d, want the next turn %d", v.Turn, c.lastTurn+1)
		}
		c.lastTurn, c.turn, c.turnOpen = v.Turn, v.Turn, true
		c.stepOpen, c.step, c.nextStep, c.calls = false, 0, 1, nil
	case TypeTurnEnd:
		v, err := Decode[TurnEnd](ev)
		if err != nil {
			return err
		}
		if !c.turnOpen || v.Turn != c.turn {
			return violation("turn/end %d does not match the open turn (%s)", v.Turn, c.openTurn())
		}
		if c.stepOpen {
			return violation("turn/end while step %d is open", c.step)
		}
		c.turnOpen = false
	case TypeStepStart:
		v, err := Decode[StepBoundary](ev)
		if err != nil {
			return err
		}
		if !c.turnOpen || v.Turn != c.turn {
			return violation("step/start names turn %d, not the open turn (%s)", v.Turn, c.openTurn())
		}
		if c.stepOpen {
			return violation("step/start while step %d is open", c.step)
		}
		if v.Step != c.nextStep {
			return violation("step/start %d, want the next step %d of turn %d", v.Step, c.nextStep, c.turn)
		}
		c.step, c.stepOpen, c.calls = v.Step, true, map[string]bool{}
	case TypeStepEnd:
		v, err := Decode[StepBoundary](ev)
		if err != nil {
			return err
		}
		if err := c.inStep(v.Turn, v.Step); err != nil {
			return err
		}
		c.stepOpen, c.nextStep, c.calls = false, c.step+1, nil
	case TypeAssistantChunk:
		v, err := Decode[AssistantChunk](ev)
		if err != nil {
			return err
		}
		return c.inStep(v.Turn, v.Step)
	case TypeAssistantMessage:
		v, err := Decode[AssistantMessage](ev)
		if err != nil {
			return err
		}
		return c.inStep(v.Turn, v.Step)
	case TypeToolCall:
		v, err := Decode[ToolCall](ev)
		if err != nil {
			return err
		}
		if err := c.inStep(v.Turn, v.Step); err != nil {
			return err
		}
		c.calls[v.CallID] = true
	case TypeToolResult:
		return c.checkToolResult(ev)
	case TypeSubagentStarted:
		v, err := Decode[SubagentStarted](ev)
		if err != nil {
			return err
		}
		if err := c.inStep(v.Turn, v.Step); err != nil {
			return err
		}
		if !c.calls[v.CallID] {
			return violation("subagent/started for call %s without a prior tool/call in step %d", v.CallID, c.step)
		}
	case TypeTodoWrite, TypeRequestHeader, TypeRequestContext, TypeToolOutput,
		TypeApprovalAsked, TypeApprovalDecided, TypeQuestionAsked, TypeQuestionAnswered:
		if !c.turnOpen {
			return violation("%s must be inside an open turn", ev.Type)
		}
	}
	return nil
}

func (c *Checker) checkToolResult(ev Event) error {
	v, err := Decode[ToolResult](ev)
	if err != nil {
		return err
	}
	if ev.SurfaceOp != nil && ev.SurfaceOp.Op == OpReplace {
		if !c.turnOpen {
			return violation("a tool/result replacement must be inside an open turn")
		}
		return nil
	}
	if err := c.inStep(v.Turn, v.Step); err != nil {
		return err
	}
	callID := v.Message.Source.CallID
	if c.calls[callID] || (v.Error != nil && v.Error.Code == CodeToolNotStarted) {
		return nil
	}
	return violation("tool/result for call %s without a prior tool/call in step %d", callID, c.step)
}

// inStep checks that (turn, step) names the open turn and step.
func (c *Checker) inStep(turn, step int) error {
	if !c.turnOpen || !c.stepOpen || turn != c.turn || step != c.step {
		return violation("names turn %d step %d, not the open step (%s)", turn, step, c.openStep())
	}
	return nil
}

func (c *Checker) openTurn() string {
	if !c.turnOpen {
		return "no turn is open"
	}
	return "open turn " + strconv.Itoa(c.turn)
}

func (c *Checker) openStep() string {
	if !c.turnOpen || !c.stepOpen {
		return "no step is open"
	}
	return "open turn " + strconv.Itoa(c.turn) + " step " + strconv.Itoa(c.step)
}
