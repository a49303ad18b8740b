package session

import (
	"encoding/json"
	"testing"
)

// FuzzLoad feeds arbitrary types, data, envelopes and surface ops to Load and
// AppendRaw, behind a valid prefix that gives replace ops real nodes to aim
// at. Nothing may panic, and whatever loads must survive every projection.
func FuzzLoad(f *testing.F) {
	for _, name := range []string{"bash-tool-turn.jsonl", "cancel.jsonl", "multi-turn-fork.jsonl"} {
		_, events := readCorpus(f, name)
		for _, ev := range events {
			if ev.Type != TypeAssistantChunk {
				f.Add(string(ev.Type), []byte(ev.Data), ev.Ignorable, uint8(0), int64(1), int64(2), "session/end-seed", []byte(`{}`))
			}
		}
	}
	f.Add("tool/result", []byte(okResult), false, uint8(2), int64(3), int64(3), "turn/end", []byte(`{"turn":1,"reason":{"kind":"completed"}}`))
	f.Add("user/message", []byte(okUser), false, uint8(1), int64(2), int64(3), "agent/inbox/spliced", []byte(`{"target":"next-step","start":0,"inserted":[]}`))
	f.Add("x/y", []byte(`null`), true, uint8(3), int64(-1), int64(9), "", []byte(`{`))

	prefix := raws(
		"turn/start", `{"turn":1}`,
		"step/start", `{"turn":1,"step":1}`,
		"user/message", okUser,
		"tool/result", okResult,
	)
	f.Fuzz(func(t *testing.T, typ string, data []byte, ignorable bool, op uint8, start, end int64, typ2 string, data2 []byte) {
		ev := Event{Seq: int64(len(prefix)), Time: 7, Type: Type(typ), Data: data, Ignorable: ignorable}
		switch op % 4 {
		case 1:
			ev.SurfaceOp = Append()
		case 2:
			ev.SurfaceOp = Replace(start, end)
			ev.SourceEventSeqs = []int64{start, end}
		case 3:
			ev.SurfaceOp = &SurfaceOp{Op: "other", Start: start}
			ev.SourceEventSeqs = []int64{}
		}
		ev2 := Event{Seq: ev.Seq + 1, Time: start, Type: Type(typ2), Data: data2}
		events := append(append([]Event{}, prefix...), ev, ev2)

		if l, err := Load(Header{SeedLength: end}, events, Options{}); err == nil {
			exercise(t, l)
		}
		live := New(Header{}, Options{Clock: counterClock()})
		for _, e := range events {
			_, _ = live.AppendRaw(e)
		}
		_, _ = live.Append(Type(typ), json.RawMessage(data))
		exercise(t, live)
		if ev, err := UnmarshalEvent(data); err == nil {
			_, _ = live.AppendRaw(ev)
		}
	})
}

func exercise(t *testing.T, l *Log) {
	t.Helper()
	events := l.Events(0, l.Len())
	_ = l.DeriveMessages()
	_ = l.State()
	_, _ = l.RequestHeader()
	_ = CheckInvariants(events)
	_, _, _ = Inbox(events, l.Header().SeedLength)
	if seed, err := Fork(l, -1); err == nil {
		if _, err := NewSeeded(Header{}, seed, Options{}); err != nil {
			t.Fatalf("a fork of a valid log does not seed: %v", err)
		}
	}
	if _, err := l.Repair(); err != nil {
		t.Fatalf("repair of a valid log failed: %v", err)
	}
	if again, _ := l.Repair(); again != nil {
		t.Fatalf("second repair appended %d events", len(again))
	}
}
