package client

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// generalPush is the reader's general decode of a push frame.
func generalPush(b []byte) (Push, bool) {
	var p Push
	if err := p.UnmarshalJSON(b); err != nil {
		return Push{}, false
	}
	return p, true
}

var fastPushSeeds = []string{
	`{"ch":"session/event","session":"s1","event":{"seq":3,"time":1700000000000,"type":"assistant/chunk","data":{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"hé \"quoted\" \\ done"}}}}`,
	`{"ch":"session/events","session":"s1","events":[{"seq":4,"time":1,"type":"assistant/chunk","data":{"a":[1,2,{"b":"]}"}]},"from":2},{"seq":5,"time":2,"type":"turn/end","data":{},"ignorable":true,"surfaceOp":{"op":"replace","start":1,"end":2},"sourceEventSeqs":[1,2,3]}],"html":"<p>x</p>"}`,
	`{"ch":"session/events","session":"s1","events":[]}`,
	`{"ch":"session/event","session":"s\u00e9","event":{"seq":1,"time":2,"type":"x","data":"str"}}`,
	`{"ch":"session/event","session":"s","event":{"seq":1,"time":2,"type":"x","data":null}}`,
	`{"ch":"session/event","session":"s","event":{"seq":1.5,"time":2,"type":"x","data":1}}`,
	`{"ch":"session/event","session":"s","event":{"Seq":1,"time":2,"type":"x","data":true}}`,
	`{"ch":"session/event","ch":"session/event","session":"s","event":{"seq":1,"time":2,"type":"x","data":1}}`,
	`{"ch":"status","session":"s","status":"running"}`,
	`{"re":"1","ok":true}`,
	` { "ch" : "session/events" , "session" : "s" , "events" : [ { "seq" : 1 , "time" : 2 , "type" : "t" , "data" : [ ] , "sourceEventSeqs" : [ ] } ] } `,
	`{"ch":"session/event","session":"s","event":{"seq":99999999999999999999,"time":2,"type":"x","data":1}}`,
	`{"ch":"session/event","session":"s","event":{"seq":-42,"time":999999999999999999,"type":"x","data":1}}`,
	`{"ch":"session/event","session":"s","event":{"seq":9223372036854775807,"time":-9223372036854775808,"type":"x","data":1}}`,
	`{"ch":"session/event","session":"s","event":{"seq":-0,"time":1000000000000000000,"type":"x\u00e9","data":"a\\b\"c"}}`,
	`{"ch":"session/event","session":"s","event":{"seq":1,"time":2,"type":"x","data":{"k":"v"},"surfaceOp":"append"}}`,
	`{"ch":"session/event","session":"s","event":null}`,
	`{"ch":"session/event","session":{"id":"s"}}`,
	`{"ch":"session/events","session":"s","events":[{"seq":1,"time":2,"type":"t","data":-0}]}`,
}

// Whenever the fast decode takes a frame, it makes exactly what the
// general decode makes; the frames it declines go the general way.
func TestDecodeEventPushMatchesTheGeneralDecode(t *testing.T) {
	t.Parallel()
	took := 0
	in := &interner{} // shared, as on a connection: interned names change nothing
	for _, s := range append(fastPushSeeds, fastPushSeeds...) {
		b := []byte(s)
		var fast Push
		if !decodeEventPush(b, &fast, in) {
			continue
		}
		took++
		want, ok := generalPush(b)
		if !ok {
			t.Fatalf("fast decode took %s, which the general decode refuses", s)
		}
		if !reflect.DeepEqual(fast, want) {
			t.Fatalf("%s:\nfast    %+v\ngeneral %+v", s, fast, want)
		}
	}
	if took < 12 {
		t.Fatalf("the fast decode took %d of the event frames, want the plain ones", took)
	}
}

func FuzzDecodeEventPush(f *testing.F) {
	for _, s := range fastPushSeeds {
		f.Add([]byte(s))
	}
	in := &interner{}
	f.Fuzz(func(t *testing.T, b []byte) {
		var fast Push
		if !decodeEventPush(b, &fast, in) {
			return
		}
		want, ok := generalPush(b)
		if !ok {
			t.Fatalf("fast decode took %q, which the general decode refuses", b)
		}
		if !reflect.DeepEqual(fast, want) {
			t.Fatalf("%q:\nfast    %+v\ngeneral %+v", b, fast, want)
		}
	})
}

// BenchmarkPushDecode: a text-delta push as the server writes it, decoded
// the fast way and the general way.
func BenchmarkPushDecode(b *testing.B) {
	frame := []byte(`{"ch":"session/events","session":"4b1d0f0e-8a4f-4a57-9c52-0d1f5c1e2a3b","events":[{"seq":1234,"time":1764600000000,"type":"assistant/chunk","data":{"turn":3,"step":1,"chunk":{"type":"text-delta","index":0,"text":"tick:1764600000000000000; lorem ipsum dolor "}}}]}`)
	b.Run("fast", func(b *testing.B) {
		in := &interner{} // the connection's
		b.ReportAllocs()
		for b.Loop() {
			var p Push
			if !decodeEventPush(frame, &p, in) {
				b.Fatal("declined")
			}
		}
	})
	// A turn's end: the block's whole text in its block-end, again in the
	// assistant message with the seqs it came from (what 1,000 viewers
	// decode at once when a turn ends).
	var text strings.Builder
	var seqs []string
	for i := range 250 {
		fmt.Fprintf(&text, "t=17646000000%08d;", i)
		seqs = append(seqs, fmt.Sprint(1000+i))
	}
	end := []byte(fmt.Sprintf(`{"ch":"session/events","session":"4b1d0f0e-8a4f-4a57-9c52-0d1f5c1e2a3b","events":[`+
		`{"seq":1250,"time":1764600000000,"type":"assistant/chunk","data":{"turn":3,"step":1,"chunk":{"type":"block-end","index":0,"block":{"type":"text","text":%q}}}},`+
		`{"seq":1251,"time":1764600000000,"type":"assistant/message","data":{"turn":3,"step":1,"message":{"role":"assistant","content":[{"type":"text","text":%q}]}},"sourceEventSeqs":[%s]},`+
		`{"seq":1252,"time":1764600000000,"type":"turn/end","data":{"turn":3}}]}`, text.String(), text.String(), strings.Join(seqs, ",")))
	b.Run("fast/turn-end", func(b *testing.B) {
		in := &interner{}
		b.SetBytes(int64(len(end)))
		b.ReportAllocs()
		for b.Loop() {
			var p Push
			if !decodeEventPush(end, &p, in) {
				b.Fatal("declined")
			}
		}
	})
	b.Run("general", func(b *testing.B) {
		for b.Loop() {
			if _, ok := generalPush(frame); !ok {
				b.Fatal("refused")
			}
		}
	})
}

// Frames that are not JSON are declined (the general decode reports
// them), whatever part of the frame breaks the grammar.
func TestDecodeEventPushDeclinesInvalidJSON(t *testing.T) {
	t.Parallel()
	const ok = `{"ch":"session/event","session":"s","event":{"seq":1,"time":2,"type":"x","data":%s}}`
	for _, data := range []string{
		`{"a":01}`, `{"a":-}`, `{"a":1.}`, `{"a":1e}`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `{1:2}`,
		`"tab` + "\t" + `"`, `"\x"`, `"\u12G4"`, `tru`, `nul`, `[[[`, `{"a":[}]}`, `1 2`,
	} {
		frame := []byte(fmt.Sprintf(ok, data))
		var p Push
		if decodeEventPush(frame, &p, nil) {
			t.Errorf("took %s", frame)
		}
	}
	for _, frame := range []string{
		fmt.Sprintf(ok, `1`) + `x`, fmt.Sprintf(ok, `1`) + `}`, fmt.Sprintf(ok, `1`)[:40],
	} {
		var p Push
		if decodeEventPush([]byte(frame), &p, nil) {
			t.Errorf("took %s", frame)
		}
	}
	var p Push
	if !decodeEventPush([]byte(fmt.Sprintf(ok, `{"a":[1,-0.5e+3,"\u00e9\n",true,null,{}],"b":{"c":{"d":[]}},"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9}`)), &p, nil) {
		t.Error("declined valid nested data with many keys")
	}
}
