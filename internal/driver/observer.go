package driver

import (
	"time"

	"harness/internal/llm"
	"harness/internal/session"
)

// Observer is told about what agents do, for metrics. Calls happen on agent
// goroutines and must not block.
type Observer interface {
	// TurnEnded reports one closed turn.
	TurnEnded(reason session.ReasonKind)
	// RequestDone reports one model request attempt; code is empty on
	// success, else the failure code.
	RequestDone(provider string, code llm.Code, took time.Duration)
	// ToolDone reports one committed tool result: ok, error or aborted.
	ToolDone(name, outcome string)
}

// Tool outcomes reported to the Observer.
const (
	ToolOK      = "ok"
	ToolError   = "error"
	ToolAborted = "aborted"
)

type nopObserver struct{}

func (nopObserver) TurnEnded(session.ReasonKind)                {}
func (nopObserver) RequestDone(string, llm.Code, time.Duration) {}
func (nopObserver) ToolDone(string, string)                     {}

func toolOutcome(r session.ToolError, isError bool) string {
	switch {
	case r.Code == session.CodeAbortedBeforeDispatch || r.Code == session.CodeToolAborted:
		return ToolAborted
	case isError:
		return ToolError
	default:
		return ToolOK
	}
}
