package session

import (
	"encoding/json"
	"testing"
)

func TestUnmarshalEvent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		ok   bool
	}{
		{"minimal", `{"seq":0,"time":1,"type":"turn/start","data":{"turn":1}}`, true},
		{"surface", `{"seq":3,"time":1,"type":"user/message","data":{},"surfaceOp":{"op":"replace","start":1,"end":2},"sourceEventSeqs":[1,2]}`, true},
		{"explicit empty sources", `{"seq":3,"time":1,"type":"assistant/message","data":{},"surfaceOp":"append","sourceEventSeqs":[]}`, true},
		{"ignorable", `{"seq":0,"time":1,"type":"x/y","data":null,"ignorable":true}`, true},
		{"extra key", `{"type":"turn/start","seq":0,"time":1,"data":{},"actor":"me"}`, false},
		{"missing data", `{"type":"turn/start","seq":0,"time":1}`, false},
		{"missing seq", `{"type":"turn/start","time":1,"data":{}}`, false},
		{"ignorable false", `{"type":"x/y","seq":0,"time":1,"data":{},"ignorable":false}`, false},
		{"bad surface op", `{"type":"user/message","seq":0,"time":1,"data":{},"surfaceOp":"prepend"}`, false},
		{"fractional time", `{"type":"turn/start","seq":0,"time":1.5,"data":{}}`, false},
		{"trailing garbage", `{"type":"turn/start","seq":0,"time":1,"data":{}} x`, false},
		{"not an object", `[1]`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ev, err := UnmarshalEvent([]byte(tt.in))
			if !tt.ok {
				wantCode(t, err, CodeInvalidEnvelope)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			out, err := MarshalEvent(ev)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tt.in {
				t.Fatalf("round trip\n got %s\nwant %s", out, tt.in)
			}
		})
	}
}

func TestMarshalEventKeepsDataBytes(t *testing.T) {
	t.Parallel()
	ev := Event{Seq: 1, Time: 2, Type: TypeToolOutput, Data: json.RawMessage(`{"text":"a < b && c > d"}`)}
	out, err := MarshalEvent(ev)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"seq":1,"time":2,"type":"tool/output","data":{"text":"a < b && c > d"}}`; string(out) != want {
		t.Fatalf("got %s", out)
	}
}
