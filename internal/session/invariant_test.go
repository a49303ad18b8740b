package session

import (
	"encoding/json"
	"testing"
)

func TestCheckerIsIncremental(t *testing.T) {
	t.Parallel()
	var c Checker
	ev := func(seq int64, typ Type, data string) Event {
		return Event{Seq: seq, Time: 1, Type: typ, Data: json.RawMessage(data)}
	}
	steps := []struct {
		ev Event
		ok bool
	}{
		{ev(0, TypeTurnStart, `{"turn":1}`), true},
		{ev(1, TypeStepStart, `{"turn":1,"step":3}`), false}, // refused: state unchanged
		{ev(2, TypeStepStart, `{"turn":1,"step":1}`), true},
		{ev(3, TypeToolCall, `{"turn":1,"step":1,"callId":"c1","name":"bash","arguments":""}`), true},
		{ev(4, TypeStepEnd, `{"turn":1,"step":1}`), true},
		{ev(5, TypeStepStart, `{"turn":1,"step":2}`), true},
		{Event{Seq: 6, Time: 1, Type: TypeToolResult, SurfaceOp: Append(), // c1 was called in step 1, not 2
			Data: json.RawMessage(`{"turn":1,"step":2,"message":{"id":"r","role":"user","source":{"kind":"tool","callId":"c1"},"content":[{"type":"tool-result","toolCallId":"c1","content":[]}]}}`)}, false},
		{Event{Seq: 7, Time: 1, Type: TypeToolResult, SurfaceOp: Append(), // repair's not-started result needs no call
			Data: json.RawMessage(`{"turn":1,"step":2,"error":{"code":"TOOL_NOT_STARTED"},"message":{"id":"r2","role":"user","source":{"kind":"tool","callId":"c9"},"content":[{"type":"tool-result","toolCallId":"c9","content":[]}]}}`)}, true},
		{ev(8, "plan/mode", `{}`), true}, // unknown types are not constrained
		{ev(9, TypeStepEnd, `{"turn":1,"step":2}`), true},
		{ev(10, TypeTurnEnd, `{"turn":1,"reason":{"kind":"completed"}}`), true},
		{ev(11, TypeTurnStart, `{"turn":2}`), true},
	}
	for _, s := range steps {
		err := c.Check(s.ev)
		if s.ok && err != nil {
			t.Fatalf("seq %d: %v", s.ev.Seq, err)
		}
		if !s.ok {
			wantCode(t, err, CodeInvariant)
		}
	}
}
