package session

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"harness/internal/llm"
)

func TestAppendAssignsSeqAndTime(t *testing.T) {
	t.Parallel()
	l := newTestLog()
	for i := range 3 {
		ev, err := l.Append(TypeSessionTitle, SessionTitle{Title: "t", Source: TitleUser})
		if err != nil {
			t.Fatal(err)
		}
		if ev.Seq != int64(i) || ev.Time != int64(1000+i) || l.Len() != int64(i+1) {
			t.Fatalf("event %d: seq %d time %d len %d", i, ev.Seq, ev.Time, l.Len())
		}
	}
}

func TestAppendEncodesDataOnce(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		data any
		want string
	}{
		{"struct", TurnStart{Turn: 1}, `{"turn":1}`},
		{"pointer", &TurnStart{Turn: 1}, `{"turn":1}`},
		{"map", map[string]int{"turn": 1}, `{"turn":1}`},
		{"raw JSON is compacted", json.RawMessage("{ \"turn\" :\n 1 }"), `{"turn":1}`},
		{"bytes are compacted", []byte("{\"turn\": 1}"), `{"turn":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := newTestLog()
			ev, err := l.Append(TypeTurnStart, tt.data)
			if err != nil {
				t.Fatal(err)
			}
			if string(ev.Data) != tt.want {
				t.Fatalf("data %s, want %s", ev.Data, tt.want)
			}
			if st := l.State(); st.LastTurn != 1 || !st.TurnOpen {
				t.Fatalf("fold did not see the event: %+v", st)
			}
		})
	}
}

func TestLogOwnsItsData(t *testing.T) {
	t.Parallel()
	l := newTestLog()
	raw := []byte(`{"title":"mine","source":"user"}`)
	_, err := l.Append(TypeSessionTitle, raw)
	if err != nil {
		t.Fatal(err)
	}
	copy(raw, `{"title":"XXXX"`) // caller reuses its buffer

	msg := userMsg("u1", "hello")
	sources := []int64{0}
	sev, err := l.AppendSurface(TypeUserMessage, msg, Append(), sources)
	if err != nil {
		t.Fatal(err)
	}
	msg.Content[0].Text = "changed" // caller mutates its value
	sources[0] = 99
	sev.SourceEventSeqs[0] = 98 // caller mutates the returned event
	sev.SurfaceOp.Op = OpReplace

	got, _ := l.Event(0)
	if !strings.Contains(string(got.Data), "mine") {
		t.Fatalf("stored data changed with the caller's buffer: %s", got.Data)
	}
	if l.State().Title != "mine" {
		t.Fatalf("title %q", l.State().Title)
	}
	got, _ = l.Event(1)
	if !slices.Equal(got.SourceEventSeqs, []int64{0}) || got.SurfaceOp.Op != OpAppend {
		t.Fatalf("stored envelope changed: %+v %+v", got.SourceEventSeqs, got.SurfaceOp)
	}
	if text := l.DeriveMessages()[0].Content[0].Text; text != "hello" {
		t.Fatalf("derived message changed with the caller's value: %q", text)
	}
	events := l.Events(0, 2)
	events[1].SourceEventSeqs[0] = 97
	events[1].SurfaceOp.Start = 5
	derived := l.DeriveMessages()
	derived[0].ID = "x"
	if got, _ := l.Event(1); got.SourceEventSeqs[0] != 0 || got.SurfaceOp.Start != 0 || l.DeriveMessages()[0].ID != "u1" {
		t.Fatal("Events or DeriveMessages hand out internal state")
	}
	surf := l.Surface()
	surf[0] = 42
	if l.Surface()[0] != 1 {
		t.Fatal("Surface hands out the internal slice")
	}
}

func TestSourceEventSeqsNilAndEmptyStayDistinct(t *testing.T) {
	t.Parallel()
	l := newTestLog()
	s := newScript(t, l)
	s.startTurn()
	s.startStep()
	msg := AssistantMessage{Turn: 1, Step: 1, Message: llm.Message{ID: "a", Role: llm.RoleAssistant, Content: []llm.ContentBlock{}, Source: modelSource()}}
	empty := s.surface(TypeAssistantMessage, msg, Append(), []int64{})
	msg.Message.ID = "b"
	absent := s.surface(TypeAssistantMessage, msg, Append(), nil)
	for _, ev := range []Event{empty, absent} {
		got, _ := l.Event(ev.Seq)
		b, _ := json.Marshal(got)
		if (ev.Seq == empty.Seq) != strings.Contains(string(b), `"sourceEventSeqs":[]`) {
			t.Fatalf("event %d marshals as %s", ev.Seq, b)
		}
		if (got.SourceEventSeqs == nil) != (ev.Seq == absent.Seq) {
			t.Fatalf("event %d: nil-ness of sourceEventSeqs lost", ev.Seq)
		}
	}
}

func TestAppendRaw(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ev   Event
		code ErrorCode // "" = accepted
	}{
		{"known type", Event{Type: TypeTurnStart, Data: json.RawMessage(`{"turn":1}`)}, ""},
		{"unknown ignorable type is kept", Event{Type: "sandbox/mode", Ignorable: true, Data: json.RawMessage(`{"mode":"x"}`)}, ""},
		{"unknown ignorable type may hold any JSON", Event{Type: "plan/mode", Ignorable: true, Data: json.RawMessage(`null`)}, ""},
		{"unknown required type", Event{Type: "sandbox/mode", Data: json.RawMessage(`{}`)}, CodeUnknownEventType},
		{"legacy header delta even if ignorable", Event{Type: "request/header-delta", Ignorable: true, Data: json.RawMessage(`{}`)}, CodeInvalidEnvelope},
		{"empty type", Event{Data: json.RawMessage(`{}`)}, CodeInvalidEnvelope},
		{"surface op on an unknown type", Event{Type: "x/y", Ignorable: true, Data: json.RawMessage(`{}`), SurfaceOp: Append()}, CodeInvalidSurface},
		{"invalid JSON", Event{Type: TypeTurnStart, Data: json.RawMessage(`{`)}, CodeInvalidData},
		{"surface event", Event{Type: TypeUserMessage, SurfaceOp: Append(),
			Data: json.RawMessage(`{"id":"m","role":"user","content":[{"type":"text","text":"hi"}],"source":{"kind":"user"}}`)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := newTestLog()
			ev, err := l.AppendRaw(tt.ev)
			if tt.code != "" {
				wantCode(t, err, tt.code)
				if l.Len() != 0 {
					t.Fatal("refused event was appended")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ev.Seq != 0 || ev.Ignorable != tt.ev.Ignorable || ev.Type != tt.ev.Type {
				t.Fatalf("event %+v", ev)
			}
		})
	}
}

func TestUnknownIgnorableEventsAreSkippedByFolds(t *testing.T) {
	t.Parallel()
	l := newTestLog()
	if _, err := l.AppendRaw(Event{Type: "plan/mode", Ignorable: true, Data: json.RawMessage(`{"active":true}`)}); err != nil {
		t.Fatal(err)
	}
	events := l.Events(0, l.Len())
	if err := CheckInvariants(events); err != nil {
		t.Fatal(err)
	}
	if RepairClosers(events) != nil || len(l.DeriveMessages()) != 0 || l.State().TurnOpen {
		t.Fatal("an unknown event changed a fold")
	}
	reloaded, err := Load(Header{}, events, Options{})
	if err != nil {
		t.Fatalf("reload: %v", err)
	}
	if ev, _ := reloaded.Event(0); !ev.Ignorable || string(ev.Data) != `{"active":true}` {
		t.Fatalf("reloaded %+v", ev)
	}
}

func TestEnsureEndSeed(t *testing.T) {
	t.Parallel()
	l := newTestLog()
	s := newScript(t, l)
	s.toolTurn(1)
	ev, appended, err := l.EnsureEndSeed()
	if err != nil || !appended || ev.Type != TypeEndSeed || l.LastEndSeed() != ev.Seq {
		t.Fatalf("first: %+v %v %v", ev, appended, err)
	}
	n := l.Len()
	if _, appended, err := l.EnsureEndSeed(); err != nil || appended || l.Len() != n {
		t.Fatalf("second call appended: %v %v", appended, err)
	}
}

// History is a stable view: appends after it and replacements never change
// what it shows.
func TestHistoryViewIsStable(t *testing.T) {
	t.Parallel()
	l := newTestLog()
	s := newScript(t, l)
	s.startTurn()
	s.startStep()
	u1 := s.user("u1", "one")
	u2 := s.user("u2", "two")
	view := l.History()
	if len(view) != 2 || cap(view) != 2 {
		t.Fatalf("view len %d cap %d", len(view), cap(view))
	}
	s.user("u3", "three")
	summary := llm.UserText("summary", llm.Source{Kind: llm.SourcePlugin, Plugin: llm.PluginCompact})
	s.surface(TypeUserMessage, summary, Replace(u1.Seq, u2.Seq), []int64{u1.Seq, u2.Seq})
	if view[0].ID != "u1" || view[1].ID != "u2" {
		t.Fatalf("view changed: %v", messageIDs(view))
	}
	if got := messageIDs(l.History()); len(got) != 2 || got[0] != summary.ID || got[1] != "u3" {
		t.Fatalf("history after replace %v", got)
	}
}

// AppendGroup: events of a group are contiguous even under concurrent
// appends, may cite each other, and a failing draft keeps the earlier ones.
func TestAppendGroup(t *testing.T) {
	t.Parallel()
	l := newTestLog()
	s := newScript(t, l)
	s.startTurn()
	s.startStep()
	u := s.user("u1", "hello")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				if _, err := l.Append(TypeTodoWrite, TodoWrite{Todos: []Todo{}}); err != nil {
					t.Error(err)
					return
				}
			}
		}
	})
	for range 50 {
		got, err := l.AppendGroup(func(next int64) ([]Draft, error) {
			return []Draft{
				{Type: TypeCompactionPrune, Data: CompactionPrune{ShadowedRange: SeqRange{u.Seq, u.Seq}, ShadowedSeqs: []int64{}}},
				{Type: TypeTodoWrite, Data: TodoWrite{Todos: []Todo{{Content: fmt.Sprint(next), Status: TodoPending}}}},
			}, nil
		})
		if err != nil || len(got) != 2 || got[1].Seq != got[0].Seq+1 {
			t.Fatalf("group %v, %v", got, err)
		}
		tw, _ := Decode[TodoWrite](got[1])
		if tw.Todos[0].Content != fmt.Sprint(got[0].Seq) {
			t.Fatalf("build saw next %s, first event got %d", tw.Todos[0].Content, got[0].Seq)
		}
	}
	close(stop)
	wg.Wait()

	n := l.Len()
	got, err := l.AppendGroup(func(int64) ([]Draft, error) {
		return []Draft{
			{Type: TypeTodoWrite, Data: TodoWrite{Todos: []Todo{}}},
			{Type: TypeUserMessage, Data: llm.UserText("x", llm.Source{Kind: llm.SourceUser})}, // no surface op
			{Type: TypeTodoWrite, Data: TodoWrite{Todos: []Todo{}}},
		}, nil
	})
	if err == nil || len(got) != 1 || l.Len() != n+1 {
		t.Fatalf("failing group: %d appended, len %d→%d, err %v", len(got), n, l.Len(), err)
	}
}
