package session

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"harness/internal/llm"
)

// Real session logs recorded by DeepSeek Harness (testdata/README.md).

// packedRow is a run of stream deltas stored as one physical corpus row.
type packedRow struct {
	Turn  int      `json:"turn"`
	Step  int      `json:"step"`
	Index int      `json:"index"`
	Dt    []int64  `json:"dt"`
	Texts []string `json:"texts"`
	Args  []string `json:"args"`
	ID    string   `json:"id"`
	Name  string   `json:"name"`
}

var packedDelta = map[string]llm.ChunkType{
	"reasoning-chunks": llm.ChunkReasoningDelta,
	"text-chunks":      llm.ChunkTextDelta,
	"tool-call-chunks": llm.ChunkToolCallDelta,
}

// readCorpus reads a corpus file: the header line, events, and packed chunk
// rows unpacked to one assistant/chunk per delta (row k gets seq0+k and
// time0+sum(dt[:k])). Upstream-only shapes are converted the way an importer
// would: session/title's {kind} source becomes our string source, the
// "{{tools}}" placeholder of request/header is dropped, and upstream-only
// types are marked ignorable.
func readCorpus(t testing.TB, name string) (Header, []Event) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		h      Header
		events []Event
	)
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var row struct {
			Type  string          `json:"type"`
			Seq0  int64           `json:"seq0"`
			Time0 int64           `json:"time0"`
			Data  json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(line, &row); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		switch {
		case row.Type == "session":
			if err := json.Unmarshal(line, &h); err != nil {
				t.Fatalf("%s header: %v", name, err)
			}
		case packedDelta[row.Type] != "":
			events = append(events, unpack(t, row.Type, row.Seq0, row.Time0, row.Data)...)
		default:
			ev, err := UnmarshalEvent(line)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			events = append(events, importUpstream(t, ev))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return h, events
}

func unpack(t testing.TB, typ string, seq0, time0 int64, data json.RawMessage) []Event {
	t.Helper()
	var p packedRow
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatalf("packed row %d: %v", seq0, err)
	}
	parts := p.Texts
	if typ == "tool-call-chunks" {
		parts = p.Args
	}
	out := make([]Event, len(parts))
	tm := time0
	for k, part := range parts {
		if k > 0 {
			tm += p.Dt[k-1]
		}
		c := llm.Chunk{Type: packedDelta[typ], Index: p.Index}
		if c.Type == llm.ChunkToolCallDelta {
			c.ArgumentsDelta = part
			if k == 0 {
				c.ID, c.Name = p.ID, p.Name
			}
		} else {
			c.Text = part
		}
		b, err := json.Marshal(AssistantChunk{Turn: p.Turn, Step: p.Step, Chunk: c})
		if err != nil {
			t.Fatal(err)
		}
		out[k] = Event{Seq: seq0 + int64(k), Time: tm, Type: TypeAssistantChunk, Data: b}
	}
	return out
}

func importUpstream(t testing.TB, ev Event) Event {
	t.Helper()
	rewrite := func(fn func(m map[string]any)) {
		var m map[string]any
		if err := json.Unmarshal(ev.Data, &m); err != nil {
			t.Fatalf("seq %d: %v", ev.Seq, err)
		}
		fn(m)
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		ev.Data = b
	}
	switch {
	case ev.Type == TypeSessionTitle:
		rewrite(func(m map[string]any) {
			if src, ok := m["source"].(map[string]any); ok {
				m["source"] = src["kind"]
			}
			delete(m, "messageSeqs")
		})
	case ev.Type == TypeRequestHeader:
		rewrite(func(m map[string]any) {
			if h, ok := m["header"].(map[string]any); ok {
				if _, placeholder := h["tools"].(string); placeholder {
					delete(h, "tools")
				}
			}
		})
	case !KnownTypes[ev.Type]:
		ev.Ignorable = true
	}
	return ev
}

// shape is an independent summary of a derived message: role, then the
// source kind of user-role messages or the block types of assistant ones.
func shape(m llm.Message) string {
	if m.Role == llm.RoleAssistant {
		var types []string
		for _, b := range m.Content {
			types = append(types, string(b.Type))
		}
		return "assistant:" + strings.Join(types, ",")
	}
	return string(m.Role) + ":" + string(m.Source.Kind)
}

func TestCorpusRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file     string
		events   int
		lastTurn int
		lastEnd  ReasonKind
		derived  []string
		ignored  int
	}{
		{"bash-tool-turn.jsonl", 102, 1, ReasonCompleted,
			[]string{"user:user", "user:plugin", "assistant:reasoning,tool-call", "user:tool", "assistant:reasoning,text"}, 0},
		{"cancel.jsonl", 14, 1, ReasonAborted,
			[]string{"user:user", "user:plugin", "assistant:text"}, 0},
		{"parallel-tool-calls.jsonl", 32, 1, ReasonCompleted,
			[]string{"user:user", "user:plugin", "assistant:tool-call,tool-call", "user:tool", "user:tool", "assistant:text"}, 0},
		{"max-tokens-continue.jsonl", 32, 2, ReasonCompleted,
			[]string{"user:user", "user:plugin", "assistant:text", "user:user", "assistant:text"}, 0},
		{"multi-turn-fork.jsonl", 99, 2, ReasonCompleted,
			[]string{"user:user", "user:plugin", "assistant:reasoning,text", "user:user", "user:plugin", "assistant:reasoning,text"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			h, events := readCorpus(t, tt.file)
			l, err := Load(h, events, Options{})
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			if l.Len() != int64(tt.events) {
				t.Fatalf("len %d, want %d", l.Len(), tt.events)
			}
			stored := l.Events(0, l.Len())
			if err := CheckInvariants(stored); err != nil {
				t.Fatalf("invariants: %v", err)
			}

			derived := l.DeriveMessages()
			var got []string
			for _, m := range derived {
				got = append(got, shape(m))
			}
			if !slices.Equal(got, tt.derived) {
				t.Fatalf("derived %v\nwant    %v", got, tt.derived)
			}
			checkToolPairing(t, derived)

			st := l.State()
			if st.TurnOpen || st.LastTurn != tt.lastTurn || st.Title == "" {
				t.Fatalf("state %+v", st)
			}
			var lastEnd TurnEnd
			ignored := 0
			for _, ev := range stored {
				if ev.Ignorable {
					ignored++
				}
				if ev.Type == TypeTurnEnd {
					lastEnd, _ = Decode[TurnEnd](ev)
				}
				if ev.Type == TypeAssistantMessage {
					for _, src := range ev.SourceEventSeqs {
						if stored[src].Type != TypeAssistantChunk {
							t.Fatalf("assistant/message %d cites %s %d", ev.Seq, stored[src].Type, src)
						}
					}
				}
			}
			if lastEnd.Reason.Kind != tt.lastEnd || ignored != tt.ignored {
				t.Fatalf("last turn/end %q, ignorable %d", lastEnd.Reason.Kind, ignored)
			}
			if hdr, ok := l.RequestHeader(); !ok || hdr.Config.Model != "deepseek-v4-flash" {
				t.Fatalf("request header %+v", hdr)
			}
			if RepairClosers(stored) != nil {
				t.Fatal("a balanced recorded log needs repair")
			}
			nextTurn, nextStep, err := Inbox(stored, h.SeedLength)
			if err != nil || len(nextTurn)+len(nextStep) != 0 {
				t.Fatalf("inbox after the last claim: %d %d %v", len(nextTurn), len(nextStep), err)
			}

			// Round trip through JSON: the same events load again, byte for byte.
			var again []Event
			for _, ev := range stored {
				b, err := MarshalEvent(ev)
				if err != nil {
					t.Fatal(err)
				}
				back, err := UnmarshalEvent(b)
				if err != nil {
					t.Fatalf("seq %d: %v", ev.Seq, err)
				}
				again = append(again, back)
			}
			reloaded, err := Load(h, again, Options{})
			if err != nil {
				t.Fatalf("reload: %v", err)
			}
			for i, ev := range reloaded.Events(0, reloaded.Len()) {
				if !bytes.Equal(ev.Data, stored[i].Data) || ev.Type != stored[i].Type || ev.Time != stored[i].Time ||
					!slices.Equal(ev.SourceEventSeqs, stored[i].SourceEventSeqs) || ev.Ignorable != stored[i].Ignorable {
					t.Fatalf("seq %d changed in the round trip", i)
				}
			}
		})
	}
}

// checkToolPairing asserts that every tool-call block is answered by tool
// results, in model order, right after its assistant message.
func checkToolPairing(t *testing.T, msgs []llm.Message) {
	t.Helper()
	for i, m := range msgs {
		for k, call := range m.ToolCalls() {
			j := i + 1 + k
			if j >= len(msgs) || msgs[j].Source.CallID != call.ID || msgs[j].Content[0].ToolCallID != call.ID {
				t.Fatalf("tool call %s of message %d is not answered at %d", call.ID, i, j)
			}
		}
	}
}

func TestCorpusForkedChild(t *testing.T) {
	t.Parallel()
	h, events := readCorpus(t, "multi-turn-fork.jsonl")
	l, err := Load(h, events, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if h.ParentSession == "" || h.SeedLength != 42 || l.LastEndSeed() != 42 {
		t.Fatalf("header %+v, last end-seed %d", h, l.LastEndSeed())
	}
	// The seed's own queue (inserted and claimed before seq 42) is ignored,
	// and the child's own insert+claim cancel out.
	nextTurn, _, err := Inbox(l.Events(0, l.Len()), h.SeedLength)
	if err != nil || len(nextTurn) != 0 {
		t.Fatalf("child inbox %v %v", messageIDs(nextTurn), err)
	}
	// Forking the child again at its end works and keeps the whole history.
	seed, err := Fork(l, -1)
	if err != nil {
		t.Fatal(err)
	}
	grandchild, err := NewSeeded(Header{ID: "g", ParentSession: h.ID}, seed, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if grandchild.LastEndSeed() != int64(len(seed)) || len(grandchild.DeriveMessages()) != len(l.DeriveMessages()) {
		t.Fatalf("grandchild end-seed %d messages %d", grandchild.LastEndSeed(), len(grandchild.DeriveMessages()))
	}
}

// TestCorpusCrashRepair cuts a real tool turn where a crash could leave it
// and checks the closers repair it into a valid, model-consumable history.
func TestCorpusCrashRepair(t *testing.T) {
	t.Parallel()
	h, events := readCorpus(t, "bash-tool-turn.jsonl")
	const assistantSeq, callSeq = 64, 65
	if events[assistantSeq].Type != TypeAssistantMessage || events[callSeq].Type != TypeToolCall {
		t.Fatalf("fixture moved: %s %s", events[assistantSeq].Type, events[callSeq].Type)
	}
	tests := []struct {
		name    string
		cut     int // events kept
		code    string
		sources []int64
	}{
		{"crash while the tool ran", callSeq + 1, CodeToolOutcomeUnknown, []int64{callSeq}},
		{"crash before the tool started", assistantSeq + 1, CodeToolNotStarted, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l, err := Load(h, events[:tt.cut], Options{})
			if err != nil {
				t.Fatal(err)
			}
			closers, err := l.Repair()
			if err != nil {
				t.Fatal(err)
			}
			types := make([]Type, len(closers))
			for i, ev := range closers {
				types[i] = ev.Type
			}
			if !slices.Equal(types, []Type{TypeToolResult, TypeStepEnd, TypeTurnEnd}) {
				t.Fatalf("closers %v", types)
			}
			tr, _ := Decode[ToolResult](closers[0])
			if tr.Error.Code != tt.code || !slices.Equal(closers[0].SourceEventSeqs, tt.sources) {
				t.Fatalf("synthetic result %+v sources %v", tr.Error, closers[0].SourceEventSeqs)
			}
			if want := fmt.Sprintf("interrupted-tool-result-call_00_fkbBRJsUrGKd1pWVc4Gn8233-%d", tt.cut); tr.Message.ID != want {
				t.Fatalf("id %s, want %s", tr.Message.ID, want)
			}
			if err := CheckInvariants(l.Events(0, l.Len())); err != nil {
				t.Fatal(err)
			}
			derived := l.DeriveMessages()
			checkToolPairing(t, derived)
			if last := derived[len(derived)-1]; !last.Content[0].IsError {
				t.Fatalf("last derived message %+v", last)
			}
		})
	}
}
