package testkit_test

import (
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	"harness/internal/models"
	"harness/internal/session"
	"harness/internal/testkit"
)

func ev(seq int64, typ session.Type, data string) session.Event {
	return session.Event{Seq: seq, Type: typ, Data: json.RawMessage(data)}
}

func TestTypes(t *testing.T) {
	t.Parallel()
	chunk := func(seq int64) session.Event { return ev(seq, session.TypeAssistantChunk, `{}`) }
	tests := []struct {
		name   string
		events []session.Event
		want   []string
	}{
		{"empty", nil, nil},
		{"no chunks", []session.Event{ev(0, session.TypeTurnStart, `{}`), ev(1, session.TypeTurnEnd, `{}`)},
			[]string{"turn/start", "turn/end"}},
		{"a run folds to one", []session.Event{ev(0, session.TypeStepStart, `{}`), chunk(1), chunk(2), chunk(3), ev(4, session.TypeStepEnd, `{}`)},
			[]string{"step/start", "assistant/chunk*", "step/end"}},
		{"separate runs stay separate", []session.Event{chunk(0), ev(1, session.TypeStepEnd, `{}`), chunk(2), chunk(3)},
			[]string{"assistant/chunk*", "step/end", "assistant/chunk*"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := testkit.Types(tt.events); !slices.Equal(got, tt.want) {
				t.Fatalf("Types = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDump(t *testing.T) {
	t.Parallel()
	long := `{"text":"` + strings.Repeat("x", 400) + `"}`
	withOp := ev(2, session.TypeUserMessage, `{"m":1}`)
	withOp.SurfaceOp = session.Append()
	got := testkit.Dump([]session.Event{
		ev(0, session.TypeTurnStart, `{"turn":1}`),
		ev(1, session.TypeAssistantChunk, `{"chunk":"hidden"}`),
		withOp,
		ev(3, session.TypeAssistantMessage, long),
	})
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3 (chunks left out):\n%s", len(lines), got)
	}
	if !strings.Contains(lines[0], "turn/start") || !strings.Contains(lines[0], `{"turn":1}`) {
		t.Errorf("line 0 %q", lines[0])
	}
	op, _ := json.Marshal(withOp.SurfaceOp)
	if !strings.Contains(lines[1], string(op)) {
		t.Errorf("line 1 %q lacks the surface op %s", lines[1], op)
	}
	if !strings.HasSuffix(lines[2], "…") || len(lines[2]) > 360 {
		t.Errorf("long data not cut: %d bytes", len(lines[2]))
	}
}

func TestFind(t *testing.T) {
	t.Parallel()
	events := []session.Event{
		ev(0, session.TypeTurnStart, `{"turn":1}`),
		ev(1, session.TypeTurnEnd, `{"turn":1,"reason":{"kind":"completed"}}`),
		ev(2, session.TypeTurnStart, `{"turn":2}`),
	}
	got := testkit.Find[session.TurnStart](t, events, session.TypeTurnStart)
	if len(got) != 2 || got[0].Turn != 1 || got[1].Turn != 2 {
		t.Fatalf("Find = %+v", got)
	}
}

// fatalTB records the first fatal failure and stops the goroutine, as
// testing.T does, so a helper's failure can be asserted.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (f *fatalTB) Fatal(args ...any) { f.Fatalf("%v", args...) }

// failure runs fn with a fatalTB and returns its fatal message ("" when
// it passed).
func failure(t *testing.T, fn func(testing.TB)) string {
	f := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	return f.msg
}

func TestCheckLog(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// store adjusts what reaches the store from the log's events.
		store func([]session.Event) []session.Event
		want  string // substring of the failure; "" passes
	}{
		{"identical", func(evs []session.Event) []session.Event { return evs }, ""},
		{"one missing", func(evs []session.Event) []session.Event { return evs[:len(evs)-1] }, "store has 2 events, log 3"},
		{"one differs", func(evs []session.Event) []session.Event {
			out := slices.Clone(evs)
			out[1].Data = json.RawMessage(`{"turn":1,"step":2}`)
			return out
		}, "stored event 1 differs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := testkit.OpenStore(t)
			if err := st.CreateSession(t.Context(), &models.Session{ID: "s", OwnerID: "u", Workspace: t.TempDir(), Provider: "p", Model: "m"}); err != nil {
				t.Fatal(err)
			}
			l := session.New(session.Header{ID: "s"}, session.Options{Clock: func() int64 { return 1 }})
			for _, a := range []struct {
				typ  session.Type
				data any
			}{
				{session.TypeTurnStart, session.TurnStart{Turn: 1}},
				{session.TypeStepStart, session.StepBoundary{Turn: 1, Step: 1}},
				{session.TypeStepEnd, session.StepBoundary{Turn: 1, Step: 1}},
			} {
				if _, err := l.Append(a.typ, a.data); err != nil {
					t.Fatal(err)
				}
			}
			for _, e := range tt.store(l.Events(0, l.Len())) {
				st.W.Enqueue("s", e)
			}
			got := failure(t, func(tb testing.TB) { testkit.CheckLog(tb, st, l, "s") })
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Fatalf("CheckLog failed with %q, want %q", got, tt.want)
			}
		})
	}
}
