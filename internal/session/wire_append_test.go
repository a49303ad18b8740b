package session

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestAppendEventMatchesMarshalEvent: the hand encoding is MarshalEvent's,
// byte for byte, for every envelope shape.
func TestAppendEventMatchesMarshalEvent(t *testing.T) {
	t.Parallel()
	data := []json.RawMessage{
		json.RawMessage(`{"turn":1,"step":2,"chunk":{"type":"text-delta","index":0,"text":"<&> \u2028 ünï \"q\""}}`),
		json.RawMessage(`{}`), json.RawMessage(`[1,2.5e300,null,true]`), json.RawMessage(`"s"`), nil,
	}
	envelopes := []Event{
		{Seq: 0, Time: 0, Type: TypeTurnStart},
		{Seq: 12345678901, Time: -5, Type: TypeAssistantChunk, Ignorable: true},
		{Seq: 7, Time: 1764547200000, Type: TypeUserMessage, SurfaceOp: Append()},
		{Seq: 9, Time: 1, Type: TypeToolResult, SurfaceOp: Replace(3, 8), SourceEventSeqs: []int64{3, 4, 8}},
		{Seq: 10, Time: 1, Type: TypeAssistantMessage, SourceEventSeqs: []int64{}},
		{Seq: 11, Time: 1, Type: "plugin/ünusual \"type\"<x>", Ignorable: true, SurfaceOp: Append(), SourceEventSeqs: []int64{-1}},
	}
	for _, env := range envelopes {
		for _, d := range data {
			ev := env
			ev.Data = d
			want, err := MarshalEvent(ev)
			if err != nil {
				t.Fatal(err)
			}
			got, err := AppendEvent([]byte("prefix"), ev)
			if err != nil || !bytes.Equal(got, append([]byte("prefix"), want...)) {
				t.Errorf("AppendEvent = %s, %v\nMarshalEvent = %s", got, err, want)
			}
		}
	}
	if _, err := AppendEvent(nil, Event{Type: TypeToolResult, Data: json.RawMessage(`{}`), SurfaceOp: &SurfaceOp{Op: "bogus"}}); err == nil {
		t.Error("an unknown surface op encoded")
	}
}
