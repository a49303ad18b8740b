package session

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"harness/internal/llm"
)

// Tests named TestCaseNN port upstream-core §8 cases 1–11.

func TestCase01AppendRejectsNonLosslessData(t *testing.T) {
	t.Parallel()
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	tests := []struct {
		name string
		typ  Type
		data any
	}{
		{"nil data", TypeEndSeed, nil},
		{"typed nil pointer", TypeTurnStart, (*TurnStart)(nil)},
		{"NaN", TypeLLMRetry, map[string]any{"delayMs": math.NaN()}},
		{"Inf", TypeLLMRetry, map[string]any{"delayMs": math.Inf(1)}},
		{"channel", TypeTodoWrite, map[string]any{"todos": make(chan int)}},
		{"func", TypeTodoWrite, map[string]any{"todos": func() {}}},
		{"cycle", TypeTodoWrite, cyclic},
		{"invalid raw JSON", TypeTurnStart, json.RawMessage(`{"turn":`)},
		{"invalid bytes", TypeTurnStart, []byte(`{"turn":1}}`)},
		{"empty raw", TypeTurnStart, json.RawMessage(nil)},
		{"invalid UTF-8", TypeSessionTitle, []byte("{\"title\":\"\xff\"}")},
		{"array for an object type", TypeTurnStart, json.RawMessage(`[1]`)},
		{"wrong field type", TypeTurnStart, json.RawMessage(`{"turn":"one"}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sunk := 0
			l := New(Header{}, Options{Sink: func(Event) { sunk++ }})
			_, err := l.Append(tt.typ, tt.data)
			wantCode(t, err, CodeInvalidData)
			if l.Len() != 0 || sunk != 0 {
				t.Fatalf("log changed: len %d, sunk %d", l.Len(), sunk)
			}
		})
	}
}

func TestCase02SurfaceOpOnlyOnSurfaceTypes(t *testing.T) {
	t.Parallel()
	msg, _ := json.Marshal(userMsg("m1", "hi"))
	tests := []struct {
		name   string
		append func(l *Log) error
	}{
		{"user/message without surfaceOp via Append", func(l *Log) error {
			_, err := l.Append(TypeUserMessage, userMsg("m1", "hi"))
			return err
		}},
		{"user/message with nil op", func(l *Log) error {
			_, err := l.AppendSurface(TypeUserMessage, userMsg("m1", "hi"), nil, nil)
			return err
		}},
		{"turn/start with a surfaceOp", func(l *Log) error {
			_, err := l.AppendSurface(TypeTurnStart, TurnStart{Turn: 1}, Append(), nil)
			return err
		}},
		{"raw user/message without surfaceOp", func(l *Log) error {
			_, err := l.AppendRaw(Event{Type: TypeUserMessage, Data: msg})
			return err
		}},
		{"raw turn/start with surfaceOp", func(l *Log) error {
			_, err := l.AppendRaw(Event{Type: TypeTurnStart, Data: json.RawMessage(`{"turn":1}`), SurfaceOp: Append()})
			return err
		}},
		{"raw turn/start with sourceEventSeqs", func(l *Log) error {
			_, err := l.AppendRaw(Event{Type: TypeTurnStart, Data: json.RawMessage(`{"turn":1}`), SourceEventSeqs: []int64{}})
			return err
		}},
		{"unknown surface op", func(l *Log) error {
			_, err := l.AppendSurface(TypeUserMessage, userMsg("m1", "hi"), &SurfaceOp{Op: "prepend"}, nil)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := newTestLog()
			wantCode(t, tt.append(l), CodeInvalidSurface)
			if l.Len() != 0 || len(l.Surface()) != 0 {
				t.Fatalf("log changed: len %d surface %v", l.Len(), l.Surface())
			}
		})
	}
}

func TestCase03SeedWithSeqGapIsNotContiguous(t *testing.T) {
	t.Parallel()
	ev := func(seq int64) Event {
		return Event{Seq: seq, Time: 1, Type: TypeSessionTitle, Data: json.RawMessage(`{"title":"t","source":"user"}`)}
	}
	seed := []Event{ev(0), ev(1), ev(3)}
	for name, load := range map[string]func() error{
		"Load":      func() error { _, err := Load(Header{}, seed, Options{}); return err },
		"NewSeeded": func() error { _, err := NewSeeded(Header{}, seed, Options{}); return err },
	} {
		err := load()
		wantCode(t, err, CodeNotContiguous)
		if !strings.Contains(err.Error(), "not contiguous") || !strings.Contains(err.Error(), "seq 3") {
			t.Fatalf("%s: message should say not contiguous and name seq 3: %v", name, err)
		}
	}
}

func TestCase04EndSeedMarker(t *testing.T) {
	t.Parallel()
	parent := newTestLog()
	s := newScript(t, parent)
	s.toolTurn(1)
	seed := parent.Events(0, parent.Len())

	var sunk []int64
	child, err := NewSeeded(Header{ID: "child"}, seed, Options{Sink: func(ev Event) { sunk = append(sunk, ev.Seq) }})
	if err != nil {
		t.Fatal(err)
	}
	n := int64(len(seed))
	if child.Len() != n+1 {
		t.Fatalf("child len %d, want %d", child.Len(), n+1)
	}
	if last, _ := child.Event(n); last.Type != TypeEndSeed || child.LastEndSeed() != n {
		t.Fatalf("last event %s, LastEndSeed %d; want end-seed at %d", last.Type, child.LastEndSeed(), n)
	}
	if want := seqs(child.Events(0, child.Len())); !slices.Equal(sunk, want) {
		t.Fatalf("sink saw %v, want every event %v", sunk, want)
	}
	if child.Header().SeedLength != n {
		t.Fatalf("SeedLength %d, want %d", child.Header().SeedLength, n)
	}

	// Re-seeding the untouched child adds no second marker.
	again, err := NewSeeded(Header{ID: "again"}, child.Events(0, child.Len()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Len() != child.Len() {
		t.Fatalf("re-seeded len %d, want %d (no second marker)", again.Len(), child.Len())
	}
	if again.Header().SeedLength != n {
		t.Fatalf("re-seeded SeedLength %d, want %d (marker not counted)", again.Header().SeedLength, n)
	}

	// An explicit empty seed gets the marker at seq 0.
	empty, err := NewSeeded(Header{}, []Event{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ev, ok := empty.Event(0); !ok || ev.Type != TypeEndSeed || empty.Len() != 1 {
		t.Fatalf("empty seed: len %d first %v", empty.Len(), ev.Type)
	}

	// A fresh session has no marker.
	if fresh := New(Header{}, Options{}); fresh.Len() != 0 || fresh.LastEndSeed() != -1 {
		t.Fatalf("fresh: len %d LastEndSeed %d", fresh.Len(), fresh.LastEndSeed())
	}

	// Load (cold load) never adds a marker and never calls the Sink.
	loadedSunk := 0
	loaded, err := Load(Header{}, seed, Options{Sink: func(Event) { loadedSunk++ }})
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Len() != n || loadedSunk != 0 {
		t.Fatalf("Load: len %d sunk %d, want %d and 0", loaded.Len(), loadedSunk, n)
	}
}

func TestCase05EmptyAssistantMessageProjectsToNothing(t *testing.T) {
	t.Parallel()
	l := newTestLog()
	s := newScript(t, l)
	s.startTurn()
	s.startStep()
	u := s.user("u1", "hi")
	a := s.assistant("a1") // content []
	if got := l.Surface(); !slices.Equal(got, []int64{u.Seq, a.Seq}) {
		t.Fatalf("surface %v, want [%d %d]", got, u.Seq, a.Seq)
	}
	if got := messageIDs(l.DeriveMessages()); !slices.Equal(got, []string{"u1"}) {
		t.Fatalf("derived %v, want [u1]", got)
	}
}

func TestCase06ReplaceSpan(t *testing.T) {
	t.Parallel()
	l := newTestLog()
	s := newScript(t, l)
	var n []int64
	for i := 1; i <= 5; i++ {
		n = append(n, s.user(fmt.Sprint("m", i), "text").Seq)
	}
	summary := userMsg("sum", "summary of m2..m4")
	summary.Source = llm.Source{Kind: llm.SourcePlugin, Plugin: llm.PluginCompact, CompactionID: "c1"}

	// Missing shadowed seq in sourceEventSeqs: refused, nothing changes.
	_, err := l.AppendSurface(TypeUserMessage, summary, Replace(n[1], n[3]), []int64{n[1], n[3]})
	wantCode(t, err, CodeInvalidSurface)
	if l.ReplaceGeneration() != 0 || l.Len() != 5 || len(l.DeriveMessages()) != 5 {
		t.Fatalf("refused replace changed the log")
	}

	ev := s.surface(TypeUserMessage, summary, Replace(n[1], n[3]), []int64{n[1], n[2], n[3]})
	if got, want := l.Surface(), []int64{n[0], ev.Seq, n[4]}; !slices.Equal(got, want) {
		t.Fatalf("surface %v, want %v", got, want)
	}
	if got := messageIDs(l.DeriveMessages()); !slices.Equal(got, []string{"m1", "sum", "m5"}) {
		t.Fatalf("derived %v", got)
	}
	if l.ReplaceGeneration() != 1 {
		t.Fatalf("ReplaceGeneration %d, want 1", l.ReplaceGeneration())
	}
}

func TestCase07ToolResultReplacementRestrictions(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) (*Log, *script, Event, Event, Event) {
		l := newTestLog()
		s := newScript(t, l)
		s.startTurn()
		s.startStep()
		u := s.user("u1", "go")
		s.assistant("a1", llm.ToolCall("c1", "bash", "{}"), llm.ToolCall("c2", "bash", "{}"))
		s.call("c1")
		s.call("c2")
		r1 := s.result("c1", strings.Repeat("long output ", 50))
		r2 := s.result("c2", "short")
		return l, s, u, r1, r2
	}
	pruned := func(s *script) ToolResult {
		tr := s.toolResult("c1", "[pruned]")
		return tr
	}
	tests := []struct {
		name    string
		data    func(s *script) ToolResult
		op      func(u, r1, r2 Event) *SurfaceOp
		sources func(u, r1, r2 Event) []int64
		ok      bool
	}{
		{"content-only change", pruned,
			func(u, r1, r2 Event) *SurfaceOp { return Replace(r1.Seq, r1.Seq) },
			func(u, r1, r2 Event) []int64 { return []int64{r1.Seq} }, true},
		{"changes isError", func(s *script) ToolResult {
			tr := pruned(s)
			tr.Message.Content[0].IsError = true
			return tr
		},
			func(u, r1, r2 Event) *SurfaceOp { return Replace(r1.Seq, r1.Seq) },
			func(u, r1, r2 Event) []int64 { return []int64{r1.Seq} }, false},
		{"changes error", func(s *script) ToolResult {
			tr := pruned(s)
			tr.Error = &ToolError{Code: "X"}
			return tr
		},
			func(u, r1, r2 Event) *SurfaceOp { return Replace(r1.Seq, r1.Seq) },
			func(u, r1, r2 Event) []int64 { return []int64{r1.Seq} }, false},
		{"changes message id", func(s *script) ToolResult {
			tr := pruned(s)
			tr.Message.ID = "other"
			return tr
		},
			func(u, r1, r2 Event) *SurfaceOp { return Replace(r1.Seq, r1.Seq) },
			func(u, r1, r2 Event) []int64 { return []int64{r1.Seq} }, false},
		{"spans two nodes", pruned,
			func(u, r1, r2 Event) *SurfaceOp { return Replace(r1.Seq, r2.Seq) },
			func(u, r1, r2 Event) []int64 { return []int64{r1.Seq, r2.Seq} }, false},
		{"targets a user message", pruned,
			func(u, r1, r2 Event) *SurfaceOp { return Replace(u.Seq, u.Seq) },
			func(u, r1, r2 Event) []int64 { return []int64{u.Seq} }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l, s, u, r1, r2 := setup(t)
			before := l.DeriveMessages()
			_, err := l.AppendSurface(TypeToolResult, tt.data(s), tt.op(u, r1, r2), tt.sources(u, r1, r2))
			if !tt.ok {
				wantCode(t, err, CodeInvalidSurface)
				if l.ReplaceGeneration() != 0 || len(l.DeriveMessages()) != len(before) {
					t.Fatal("refused replacement changed the log")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := l.DeriveMessages()
			if len(got) != len(before) || got[2].Content[0].Content[0].Text != "[pruned]" {
				t.Fatalf("derived after prune: %+v", got)
			}
		})
	}
}

// Case 8, adapted: upstream throws on an append from a synchronous observer.
// Here the nested append succeeds and is delivered after the outer event to
// every subscriber, in order; a panicking subscriber is contained.
func TestCase08ReentrantAppendFromSubscriber(t *testing.T) {
	t.Parallel()
	l := newTestLog()
	var (
		mu        sync.Mutex
		seen      = map[string][]Type{}
		nested    Event
		nestedErr error
	)
	record := func(name string) func(Event) {
		return func(ev Event) {
			mu.Lock()
			seen[name] = append(seen[name], ev.Type)
			mu.Unlock()
		}
	}
	l.Subscribe(func(ev Event) {
		record("first")(ev)
		if ev.Type == TypeTurnStart {
			nested, nestedErr = l.Append(TypeSessionTitle, SessionTitle{Title: "nested", Source: TitleFallback})
		}
	})
	l.Subscribe(func(ev Event) {
		record("panicker")(ev)
		panic("broken viewer")
	})
	l.Subscribe(record("last"))

	outer, err := l.Append(TypeTurnStart, TurnStart{Turn: 1})
	if err != nil {
		t.Fatalf("outer append: %v", err)
	}
	if nestedErr != nil || nested.Seq != outer.Seq+1 {
		t.Fatalf("nested append: seq %d err %v", nested.Seq, nestedErr)
	}
	want := []Type{TypeTurnStart, TypeSessionTitle}
	for _, name := range []string{"first", "panicker", "last"} {
		if !slices.Equal(seen[name], want) {
			t.Errorf("%s saw %v, want %v", name, seen[name], want)
		}
	}
	if l.State().Title != "nested" || l.Len() != 2 {
		t.Fatalf("state title %q len %d", l.State().Title, l.Len())
	}
	// The log keeps working after the panics.
	if _, err := l.Append(TypeTurnEnd, TurnEnd{Turn: 1, Reason: TurnEndReason{Kind: ReasonCompleted}}); err != nil {
		t.Fatal(err)
	}
	if got := seen["last"]; len(got) != 3 || got[2] != TypeTurnEnd {
		t.Fatalf("last saw %v", got)
	}
}

// Case 8b, adapted: an inbox splice appended from an observer of the agent's
// own splice is not lost: it is logged after the outer one and the inbox
// projection holds both messages in order.
func TestCase08bNestedInboxSpliceFromObserver(t *testing.T) {
	t.Parallel()
	l := newTestLog()
	var order []int64
	l.Subscribe(func(ev Event) {
		if ev.Type != TypeInboxSpliced {
			return
		}
		order = append(order, ev.Seq)
		if ev.Seq == 0 {
			_, err := l.Append(TypeInboxSpliced, InboxSpliced{Target: TargetNextTurn, Start: 1,
				Inserted: []llm.Message{userMsg("nested", "second")}})
			if err != nil {
				t.Errorf("nested splice: %v", err)
			}
		}
	})
	if _, err := l.Append(TypeInboxSpliced, InboxSpliced{Target: TargetNextTurn, Start: 0,
		Inserted: []llm.Message{userMsg("outer", "first")}}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(order, []int64{0, 1}) {
		t.Fatalf("observer saw splices %v, want [0 1]", order)
	}
	nextTurn, nextStep, err := Inbox(l.Events(0, l.Len()), 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := messageIDs(nextTurn); !slices.Equal(got, []string{"outer", "nested"}) || len(nextStep) != 0 {
		t.Fatalf("inbox next-turn %v next-step %d", got, len(nextStep))
	}
}

func TestCase09Fork(t *testing.T) {
	t.Parallel()
	parent := New(Header{ID: "p", Cwd: "/work/p"}, Options{Clock: counterClock()})
	s := newScript(t, parent)
	s.toolTurn(1)
	title := s.append(TypeSessionTitle, SessionTitle{Title: "t", Source: TitleModel})
	s.startTurn()
	s.startStep()
	s.user("u2", "second")

	t.Run("boundary inside an open turn", func(t *testing.T) {
		_, err := Fork(parent, -1)
		wantCode(t, err, CodeOpenTurn)
		_, err = Fork(parent, title.Seq+1) // the turn/start itself
		wantCode(t, err, CodeOpenTurn)
	})
	t.Run("boundary not an existing seq", func(t *testing.T) {
		_, err := Fork(parent, parent.Len())
		wantCode(t, err, CodeInvalidBoundary)
		_, err = Fork(New(Header{}, Options{}), 0)
		wantCode(t, err, CodeInvalidBoundary)
	})
	t.Run("empty source", func(t *testing.T) {
		seed, err := Fork(New(Header{}, Options{}), -1)
		if err != nil || len(seed) != 0 {
			t.Fatalf("seed %v err %v", seed, err)
		}
	})
	t.Run("default boundary after turn/end and a log-only event", func(t *testing.T) {
		closed := New(Header{ID: "p2", Cwd: "/work/p"}, Options{Clock: counterClock()})
		cs := newScript(t, closed)
		cs.toolTurn(1)
		logOnly := cs.append(TypeSessionTitle, SessionTitle{Title: "t", Source: TitleModel})
		seed, err := Fork(closed, -1)
		if err != nil {
			t.Fatal(err)
		}
		if last := seed[len(seed)-1]; last.Seq != logOnly.Seq || last.Type != TypeSessionTitle {
			t.Fatalf("seed ends with %s %d, want the log-only event %d", last.Type, last.Seq, logOnly.Seq)
		}
		h := closed.Header()
		child, err := NewSeeded(Header{ID: "c", Cwd: h.Cwd, ParentSession: h.ID, SeedLength: int64(len(seed))}, seed, Options{})
		if err != nil {
			t.Fatal(err)
		}
		ch := child.Header()
		if ch.ParentSession != "p2" || ch.SeedLength != int64(len(seed)) || ch.Cwd != "/work/p" {
			t.Fatalf("child header %+v", ch)
		}
		if got, want := messageIDs(child.DeriveMessages()), messageIDs(closed.DeriveMessages()); !slices.Equal(got, want) {
			t.Fatalf("child history %v, want parent's %v", got, want)
		}
		if child.State().LastTurn != 1 {
			t.Fatalf("child LastTurn %d, want 1 (numbering continues)", child.State().LastTurn)
		}
		// Deep copy: changing the seed does not reach the parent.
		seed[0].Data[0] = ' '
		if ev, _ := closed.Event(0); ev.Data[0] != '{' {
			t.Fatal("seed shares data with the parent")
		}
	})
	t.Run("explicit boundary at a turn end", func(t *testing.T) {
		seed, err := Fork(parent, title.Seq-1)
		if err != nil {
			t.Fatal(err)
		}
		if seed[len(seed)-1].Type != TypeTurnEnd {
			t.Fatalf("seed ends with %s", seed[len(seed)-1].Type)
		}
	})
}

func TestCase10CrashRepair(t *testing.T) {
	t.Parallel()
	l := newTestLog()
	s := newScript(t, l)
	s.startTurn()
	s.startStep()
	s.user("u1", "run two")
	s.assistant("a1", llm.ToolCall("c1", "bash", "{}"), llm.ToolCall("c2", "bash", "{}"))
	call := s.call("c1")
	n := l.Len()

	drafts := RepairClosers(l.Events(0, n))
	if len(drafts) != 4 {
		t.Fatalf("%d closers, want 4: %+v", len(drafts), drafts)
	}
	r1 := drafts[0].Data.(ToolResult)
	if drafts[0].Type != TypeToolResult || r1.Error.Code != CodeToolOutcomeUnknown || r1.Error.Name != "InterruptedToolError" ||
		!slices.Equal(drafts[0].SourceEventSeqs, []int64{call.Seq}) || r1.Message.Source.CallID != "c1" ||
		r1.Message.ID != fmt.Sprintf("interrupted-tool-result-c1-%d", n) || !r1.Message.Content[0].IsError {
		t.Fatalf("closer 0: %+v", drafts[0])
	}
	if !strings.Contains(r1.Message.Content[0].Content[0].Text, "unknown") || !strings.Contains(r1.Message.Content[0].Content[0].Text, "idempotent") {
		t.Fatalf("outcome-unknown text: %q", r1.Message.Content[0].Content[0].Text)
	}
	r2 := drafts[1].Data.(ToolResult)
	if r2.Error.Code != CodeToolNotStarted || drafts[1].SourceEventSeqs != nil || r2.Message.Source.CallID != "c2" ||
		r2.Message.ID != fmt.Sprintf("interrupted-tool-result-c2-%d", n+1) || !strings.Contains(r2.Message.Content[0].Content[0].Text, "never ran") {
		t.Fatalf("closer 1: %+v", drafts[1])
	}
	if drafts[2].Type != TypeStepEnd || drafts[2].Data != (StepBoundary{Turn: 1, Step: 1}) {
		t.Fatalf("closer 2: %+v", drafts[2])
	}
	if drafts[3].Type != TypeTurnEnd || drafts[3].Data.(TurnEnd).Reason.Kind != ReasonInterrupted {
		t.Fatalf("closer 3: %+v", drafts[3])
	}

	var sunk []Type
	loaded, err := Load(Header{}, l.Events(0, n), Options{Sink: func(ev Event) { sunk = append(sunk, ev.Type) }})
	if err != nil {
		t.Fatal(err)
	}
	lastTime := l.Events(n-1, n)[0].Time
	got, err := loaded.Repair()
	if err != nil {
		t.Fatal(err)
	}
	if want := []Type{TypeToolResult, TypeToolResult, TypeStepEnd, TypeTurnEnd}; !slices.Equal(sunk, want) {
		t.Fatalf("sink saw %v, want %v", sunk, want)
	}
	for _, ev := range got {
		if ev.Time != lastTime {
			t.Fatalf("closer %d time %d, want the last event's %d", ev.Seq, ev.Time, lastTime)
		}
	}
	if err := CheckInvariants(loaded.Events(0, loaded.Len())); err != nil {
		t.Fatalf("repaired log breaks invariants: %v", err)
	}
	if got := messageIDs(loaded.DeriveMessages()); len(got) != 4 {
		t.Fatalf("repaired history %v: want user, assistant and two results", got)
	}
	if st := loaded.State(); st.TurnOpen || st.StepOpen {
		t.Fatalf("repaired state %+v", st)
	}
	// Once: a second repair appends nothing.
	if again, err := loaded.Repair(); err != nil || again != nil {
		t.Fatalf("second repair: %v %v", again, err)
	}
	// A balanced log has no closers.
	if d := RepairClosers(loaded.Events(0, loaded.Len())); d != nil {
		t.Fatalf("balanced log closers: %+v", d)
	}
}

func TestCase11Invariants(t *testing.T) {
	t.Parallel()
	l := newTestLog()
	s := newScript(t, l)
	s.toolTurn(1)
	base := l.Events(0, l.Len())
	if err := CheckInvariants(base); err != nil {
		t.Fatalf("canonical turn: %v", err)
	}
	raw := func(seq int64, typ Type, data string) Event {
		return Event{Seq: seq, Time: 1, Type: typ, Data: json.RawMessage(data)}
	}
	n := int64(len(base))
	tests := []struct {
		name   string
		events []Event
		rule   string
	}{
		{"first step of a turn is step 2", []Event{
			raw(0, TypeTurnStart, `{"turn":1}`),
			raw(1, TypeStepStart, `{"turn":1,"step":2}`),
		}, "next step 1"},
		{"tool/result without a prior tool/call", []Event{
			raw(0, TypeTurnStart, `{"turn":1}`),
			raw(1, TypeStepStart, `{"turn":1,"step":1}`),
			{Seq: 2, Time: 1, Type: TypeToolResult, SurfaceOp: Append(),
				Data: json.RawMessage(`{"turn":1,"step":1,"message":{"id":"r","role":"user","source":{"kind":"tool","callId":"c9"},"content":[{"type":"tool-result","toolCallId":"c9","content":[],"isError":false}]}}`)},
		}, "without a prior tool/call"},
		{"seq not increasing", append(slices.Clone(base), raw(n-1, TypeSessionTitle, `{"title":"x"}`)), "must increase"},
		{"second turn/start while open", []Event{
			raw(0, TypeTurnStart, `{"turn":1}`), raw(1, TypeTurnStart, `{"turn":2}`),
		}, "is open"},
		{"turn number skips", append(slices.Clone(base), raw(n, TypeTurnStart, `{"turn":3}`)), "next turn 2"},
		{"turn/end with an open step", []Event{
			raw(0, TypeTurnStart, `{"turn":1}`), raw(1, TypeStepStart, `{"turn":1,"step":1}`),
			raw(2, TypeTurnEnd, `{"turn":1,"reason":{"kind":"completed"}}`),
		}, "step 1 is open"},
		{"turn/end of another turn", []Event{
			raw(0, TypeTurnStart, `{"turn":1}`), raw(1, TypeTurnEnd, `{"turn":2,"reason":{"kind":"completed"}}`),
		}, "does not match"},
		{"chunk outside a step", []Event{
			raw(0, TypeTurnStart, `{"turn":1}`), raw(1, TypeAssistantChunk, `{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"x"}}`),
		}, "no step is open"},
		{"tool/call naming another step", []Event{
			raw(0, TypeTurnStart, `{"turn":1}`), raw(1, TypeStepStart, `{"turn":1,"step":1}`),
			raw(2, TypeToolCall, `{"turn":1,"step":2,"callId":"c","name":"bash","arguments":""}`),
		}, "not the open step"},
		{"todo/write between turns", append(slices.Clone(base), raw(n, TypeTodoWrite, `{"todos":[]}`)), "inside an open turn"},
		{"request/header between turns", append(slices.Clone(base),
			raw(n, TypeRequestHeader, `{"header":{"config":{"provider":"p","model":"m"}},"reason":"initial"}`)), "inside an open turn"},
		{"approval/asked between turns", append(slices.Clone(base), raw(n, TypeApprovalAsked, `{"id":"a","toolName":"bash"}`)), "inside an open turn"},
		{"step/start with a step open", []Event{
			raw(0, TypeTurnStart, `{"turn":1}`), raw(1, TypeStepStart, `{"turn":1,"step":1}`), raw(2, TypeStepStart, `{"turn":1,"step":2}`),
		}, "is open"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := CheckInvariants(tt.events)
			wantCode(t, err, CodeInvariant)
			if !strings.Contains(err.Error(), tt.rule) || !strings.Contains(err.Error(), "seq ") {
				t.Fatalf("message should name the seq and the rule %q: %v", tt.rule, err)
			}
		})
	}
}

// A restart withdraws the approvals and questions of the interrupted turn:
// they are closed as cancelled before the synthetic results, and an answered
// one is left alone.
func TestRepairWithdrawsPendingInteractions(t *testing.T) {
	t.Parallel()
	l := newTestLog()
	s := newScript(t, l)
	s.startTurn()
	s.startStep()
	s.user("u1", "write it")
	s.assistant("a1", llm.ToolCall("c1", "write", "{}"))
	s.call("c1")
	s.append(TypeApprovalAsked, ApprovalAsked{ID: "ap-done", ToolName: "write", CallID: "c1"})
	s.append(TypeApprovalDecided, ApprovalDecided{ID: "ap-done", Outcome: ApprovalAllowedOnce})
	s.append(TypeApprovalAsked, ApprovalAsked{ID: "ap-open", ToolName: "write", CallID: "c1"})
	s.append(TypeQuestionAsked, QuestionAsked{ID: "q-open", CallID: "c1", Questions: []Question{{ID: "q1", Question: "sure?"}}})

	loaded, err := Load(Header{}, l.Events(0, l.Len()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := loaded.Repair()
	if err != nil {
		t.Fatal(err)
	}
	var types []Type
	for _, ev := range got {
		types = append(types, ev.Type)
	}
	want := []Type{TypeApprovalDecided, TypeQuestionAnswered, TypeToolResult, TypeStepEnd, TypeTurnEnd}
	if !slices.Equal(types, want) {
		t.Fatalf("closers %v, want %v", types, want)
	}
	d, _ := Decode[ApprovalDecided](got[0])
	q, _ := Decode[QuestionAnswered](got[1])
	if d.ID != "ap-open" || d.Outcome != ApprovalCancelled || q.ID != "q-open" || q.Outcome != QuestionCancelled {
		t.Fatalf("withdrawals: %+v %+v", d, q)
	}
	if err := CheckInvariants(loaded.Events(0, loaded.Len())); err != nil {
		t.Fatal(err)
	}
	if again, _ := loaded.Repair(); again != nil {
		t.Fatalf("second repair appended %d events", len(again))
	}
}
