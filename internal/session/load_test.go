package session

import (
	"encoding/json"
	"strings"
	"testing"
)

// raws builds a contiguous event list from (type, data) pairs; surface types
// get an append op.
func raws(pairs ...string) []Event {
	var out []Event
	for i := 0; i+1 < len(pairs); i += 2 {
		ev := Event{Seq: int64(len(out)), Time: 5, Type: Type(pairs[i]), Data: json.RawMessage(pairs[i+1])}
		if IsSurface(ev.Type) {
			ev.SurfaceOp = Append()
		}
		out = append(out, ev)
	}
	return out
}

const (
	okUser      = `{"id":"u","role":"user","content":[{"type":"text","text":"hi"}],"source":{"kind":"user"}}`
	okAssistant = `{"turn":1,"step":1,"message":{"id":"a","role":"assistant","content":[{"type":"tool-call","id":"c1","name":"bash","arguments":"{}"}],"source":{"kind":"model","provider":"p","model":"m"}}}`
	okResult    = `{"turn":1,"step":1,"message":{"id":"r","role":"user","content":[{"type":"tool-result","toolCallId":"c1","content":[],"isError":false}],"source":{"kind":"tool","callId":"c1"}}}`
)

func TestLoadAcceptsAValidLog(t *testing.T) {
	t.Parallel()
	events := raws(
		"turn/start", `{"turn":1}`,
		"step/start", `{"turn":1,"step":1}`,
		"user/message", okUser,
		"request/header", `{"header":{"config":{"provider":"p","model":"m","reasoningEffort":"high","maxTokens":100},"adapterDefaults":{"reasoningEffort":true,"maxTokens":true}},"reason":"initial"}`,
		"assistant/message", okAssistant,
		"tool/call", `{"turn":1,"step":1,"callId":"c1","name":"bash","arguments":"{}"}`,
		"tool/result", okResult,
		"step/end", `{"turn":1,"step":1}`,
		"turn/end", `{"turn":1,"reason":{"kind":"completed"}}`,
	)
	events[6].SourceEventSeqs = []int64{5}
	l, err := Load(Header{ID: "x"}, events, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := l.DeriveMessages(); len(got) != 3 || got[2].Content[0].ToolCallID != "c1" {
		t.Fatalf("derived %+v", got)
	}
	h, ok := l.RequestHeader()
	if !ok || h.Config.Model != "m" || h.AdapterDefaults == nil || !h.AdapterDefaults.MaxTokens {
		t.Fatalf("request header %+v %v", h, ok)
	}
	if err := CheckInvariants(l.Events(0, l.Len())); err != nil {
		t.Fatal(err)
	}
}

func TestLoadRefusesInvalidLogs(t *testing.T) {
	t.Parallel()
	withTime := func(ev []Event, i int, tm int64) []Event { ev[i].Time = tm; return ev }
	withOp := func(ev []Event, i int, op *SurfaceOp, src []int64) []Event {
		ev[i].SurfaceOp, ev[i].SourceEventSeqs = op, src
		return ev
	}
	header := func(h string) []Event { return raws("request/header", h) }
	tests := []struct {
		name   string
		events []Event
		code   ErrorCode
		detail string // must appear in the message
	}{
		{"seq not starting at 0", []Event{{Seq: 1, Type: TypeTurnStart, Data: json.RawMessage(`{"turn":1}`)}}, CodeNotContiguous, "not contiguous"},
		{"negative time", withTime(raws("turn/start", `{"turn":1}`), 0, -1), CodeInvalidEnvelope, "time -1"},
		{"unsafe time", withTime(raws("turn/start", `{"turn":1}`), 0, 1<<53), CodeInvalidEnvelope, "safe"},
		{"invalid JSON", raws("turn/start", `{"turn":`), CodeInvalidData, "seq 0"},
		{"unknown required type", raws("turn/start", `{"turn":1}`, "hook/invoked", `{}`), CodeUnknownEventType, `seq 1 (hook/invoked)`},
		{"user message without id", raws("user/message", `{"role":"user","content":[],"source":{"kind":"user"}}`), CodeInvalidMessage, "empty id"},
		{"user message with assistant role", raws("user/message", `{"id":"u","role":"assistant","content":[],"source":{"kind":"user"}}`), CodeInvalidMessage, "role"},
		{"user message without content array", raws("user/message", `{"id":"u","role":"user","source":{"kind":"user"}}`), CodeInvalidMessage, "array"},
		{"user message without source kind", raws("user/message", `{"id":"u","role":"user","content":[],"source":{}}`), CodeInvalidMessage, "source"},
		{"assistant without model", raws("assistant/message", `{"turn":1,"step":1,"message":{"id":"a","role":"assistant","content":[],"source":{"kind":"model","provider":"p"}}}`), CodeInvalidMessage, "provider, model"},
		{"assistant with user source", raws("assistant/message", `{"turn":1,"step":1,"message":{"id":"a","role":"assistant","content":[],"source":{"kind":"user"}}}`), CodeInvalidMessage, "kind: model"},
		{"tool result with two blocks", raws("tool/result", `{"turn":1,"step":1,"message":{"id":"r","role":"user","content":[{"type":"tool-result","toolCallId":"c1","content":[]},{"type":"text","text":"x"}],"source":{"kind":"tool","callId":"c1"}}}`), CodeInvalidMessage, "exactly one"},
		{"tool result for another call", raws("tool/result", `{"turn":1,"step":1,"message":{"id":"r","role":"user","content":[{"type":"tool-result","toolCallId":"c2","content":[]}],"source":{"kind":"tool","callId":"c1"}}}`), CodeInvalidMessage, "exactly one"},
		{"tool result without callId", raws("tool/result", `{"turn":1,"step":1,"message":{"id":"r","role":"user","content":[{"type":"tool-result","toolCallId":"c2","content":[]}],"source":{"kind":"tool"}}}`), CodeInvalidMessage, "callId"},
		{"source seq in the future", withOp(raws("user/message", okUser), 0, Append(), []int64{0}), CodeInvalidSurface, "earlier"},
		{"repeated source seq", withOp(raws("turn/start", `{"turn":1}`, "user/message", okUser), 1, Append(), []int64{0, 0}), CodeInvalidSurface, "repeated"},
		{"empty sources on a user message", withOp(raws("user/message", okUser), 0, Append(), []int64{}), CodeInvalidSurface, "only on assistant/message"},
		{"replace of a non-node", withOp(raws("turn/start", `{"turn":1}`, "user/message", okUser), 1, Replace(0, 0), []int64{0}), CodeInvalidSurface, "not a current surface node"},
		{"replace with start after end", withOp(raws("user/message", okUser, "user/message", strings.Replace(okUser, `"u"`, `"v"`, 1), "user/message", strings.Replace(okUser, `"u"`, `"w"`, 1)), 2, Replace(1, 0), []int64{0, 1}), CodeInvalidSurface, "after end"},
		{"surface op missing", []Event{{Seq: 0, Time: 1, Type: TypeUserMessage, Data: json.RawMessage(okUser)}}, CodeInvalidSurface, "requires a surface op"},
		{"header without model", header(`{"header":{"config":{"provider":"p"}},"reason":"initial"}`), CodeInvalidData, "model"},
		{"header with fallback reason", header(`{"header":{"config":{"provider":"p","model":"m"}},"reason":"fallback"}`), CodeInvalidData, "fallback"},
		{"header with empty effort", header(`{"header":{"config":{"provider":"p","model":"m","reasoningEffort":""}},"reason":"initial"}`), CodeInvalidData, "reasoningEffort"},
		{"adapter default not true", header(`{"header":{"config":{"provider":"p","model":"m","maxTokens":5},"adapterDefaults":{"maxTokens":false}},"reason":"initial"}`), CodeInvalidData, "must be true"},
		{"adapter default without its field", header(`{"header":{"config":{"provider":"p","model":"m"},"adapterDefaults":{"maxTokens":true}},"reason":"initial"}`), CodeInvalidData, "does not mark"},
		{"adapter default of an unknown key", header(`{"header":{"config":{"provider":"p","model":"m"},"adapterDefaults":{"temperature":true}},"reason":"initial"}`), CodeInvalidData, "does not mark"},
		{"legacy header delta", raws("request/header-delta", `{}`), CodeInvalidEnvelope, "legacy"},
		{"known type with non-object data", raws("step/end", `"x"`), CodeInvalidData, "object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Load(Header{}, tt.events, Options{})
			wantCode(t, err, tt.code)
			if !strings.Contains(err.Error(), tt.detail) {
				t.Fatalf("message %q should contain %q", err, tt.detail)
			}
		})
	}
}

func TestLoadDoesNotAliasCallerEvents(t *testing.T) {
	t.Parallel()
	events := raws("session/title", `{"title":"a","source":"user"}`)
	l, err := Load(Header{}, events, Options{})
	if err != nil {
		t.Fatal(err)
	}
	events[0].Data[10] = 'Z'
	if ev, _ := l.Event(0); string(ev.Data) != `{"title":"a","source":"user"}` {
		t.Fatalf("stored data follows the caller's slice: %s", ev.Data)
	}
}
