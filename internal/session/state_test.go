package session

import (
	"slices"
	"testing"

	"harness/internal/llm"
)

func TestStateFold(t *testing.T) {
	t.Parallel()
	l := newTestLog()
	if st := l.State(); st.Mode != ModeAsk || st.Model != nil || st.LastTurn != 0 || st.TurnOpen {
		t.Fatalf("initial state %+v", st)
	}
	if _, ok := l.RequestHeader(); ok {
		t.Fatal("request header before any snapshot")
	}
	s := newScript(t, l)
	steps := []struct {
		name  string
		do    func()
		check func(State) bool
	}{
		{"turn/start opens turn 1", func() { s.startTurn() }, func(st State) bool { return st.LastTurn == 1 && st.TurnOpen && st.Step == 0 && !st.StepOpen }},
		{"step/start opens step 1", func() { s.startStep() }, func(st State) bool { return st.Step == 1 && st.StepOpen }},
		{"todo/write replaces todos", func() {
			s.append(TypeTodoWrite, TodoWrite{Todos: []Todo{{Content: "a", Status: TodoPending}}})
			s.append(TypeTodoWrite, TodoWrite{Todos: []Todo{{Content: "b", Status: TodoCompleted}}})
		}, func(st State) bool { return len(st.Todos) == 1 && st.Todos[0].Content == "b" }},
		{"step/end keeps the step number", func() { s.endStep() }, func(st State) bool { return st.Step == 1 && !st.StepOpen && st.TurnOpen }},
		{"turn/end closes", func() { s.endTurn() }, func(st State) bool { return !st.TurnOpen && st.Step == 0 && st.LastTurn == 1 }},
		{"permission/mode", func() { s.append(TypePermissionMode, PermissionModeSet{Mode: ModeAuto}) }, func(st State) bool { return st.Mode == ModeAuto }},
		{"model/selected", func() { s.append(TypeModelSelected, ModelSelected{Provider: "p", Model: "m", By: &Actor{UserID: "u"}}) },
			func(st State) bool { return st.Model != nil && st.Model.Model == "m" && st.Model.By.UserID == "u" }},
		{"session/title last wins", func() {
			s.append(TypeSessionTitle, SessionTitle{Title: "one", Source: TitleFallback})
			s.append(TypeSessionTitle, SessionTitle{Title: "two", Source: TitleUser})
		}, func(st State) bool { return st.Title == "two" }},
		{"second turn", func() { s.startTurn() }, func(st State) bool { return st.LastTurn == 2 && st.TurnOpen }},
	}
	for _, step := range steps {
		step.do()
		if st := l.State(); !step.check(st) {
			t.Fatalf("%s: state %+v", step.name, st)
		}
	}
	st := l.State()
	st.Todos[0].Content = "mutated"
	st.Model.By.UserID = "mutated"
	if again := l.State(); again.Todos[0].Content != "b" || again.Model.By.UserID != "u" {
		t.Fatal("State shares memory with the log")
	}
}

func TestRequestHeaderIsTheLatestSnapshot(t *testing.T) {
	t.Parallel()
	l := newTestLog()
	s := newScript(t, l)
	s.startTurn()
	temp := 0.5
	for i, model := range []string{"m1", "m2"} {
		s.append(TypeRequestHeader, RequestHeader{Reason: []HeaderReason{HeaderInitial, HeaderChange}[i], Header: EpochHeader{
			Config: llm.CallConfig{Provider: "p", Model: model, Temperature: &temp, Stop: []string{"END"}},
			System: "sys " + model,
			Tools:  []llm.ToolSchema{{Name: "bash", Parameters: []byte(`{"type":"object"}`)}},
		}})
	}
	h, ok := l.RequestHeader()
	if !ok || h.Config.Model != "m2" || h.System != "sys m2" || len(h.Tools) != 1 || *h.Config.Temperature != 0.5 {
		t.Fatalf("header %+v", h)
	}
	h.Tools[0].Name = "x"
	h.Config.Stop[0] = "x"
	*h.Config.Temperature = 9
	again, _ := l.RequestHeader()
	if again.Tools[0].Name != "bash" || again.Config.Stop[0] != "END" || *again.Config.Temperature != 0.5 {
		t.Fatal("RequestHeader shares memory with the log")
	}
}

func TestDeriveMessagesFollowsReplacements(t *testing.T) {
	t.Parallel()
	l := newTestLog()
	s := newScript(t, l)
	s.toolTurn(1)
	s.toolTurn(2)
	before := messageIDs(l.DeriveMessages())
	if len(before) != 8 {
		t.Fatalf("derived %v, want 8 messages", before)
	}
	surface := l.Surface()
	// Summarise the whole first turn (4 nodes) into one checkpoint.
	sum := userMsg("summary", "turn 1 in short")
	sum.Source = llm.Source{Kind: llm.SourcePlugin, Plugin: llm.PluginCompact}
	s.surface(TypeUserMessage, sum, Replace(surface[0], surface[3]), surface[:4])
	want := append([]string{"summary"}, before[4:]...)
	if got := messageIDs(l.DeriveMessages()); !slices.Equal(got, want) {
		t.Fatalf("after summary %v, want %v", got, want)
	}
	// Appends after a replacement extend the rebuilt history.
	s.startTurn()
	s.startStep()
	s.user("late", "more")
	if got := messageIDs(l.DeriveMessages()); !slices.Equal(got, append(want, "late")) {
		t.Fatalf("after append %v", got)
	}
	// A replay of the stored log derives the same history.
	replay, err := Load(Header{}, l.Events(0, l.Len()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := messageIDs(replay.DeriveMessages()); !slices.Equal(got, append(want, "late")) || replay.ReplaceGeneration() != 1 {
		t.Fatalf("replayed %v gen %d", got, replay.ReplaceGeneration())
	}
}
