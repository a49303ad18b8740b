package session

import (
	"slices"
	"testing"

	"harness/internal/llm"
)

// Crash repair closes every compaction bracket a dead process left open:
// the end copies the start's turn, goes before the turn's closers, says
// the compaction was interrupted unless its summary had landed, releases
// the lock and is appended once.
func TestRepairClosesCompactionBrackets(t *testing.T) {
	t.Parallel()
	turn := func(n int) *int { return &n }
	start := func(s *script, id string, turn *int) {
		s.append(TypeCompactionStart, CompactionStart{CompactionID: id, Turn: turn})
	}
	tests := []struct {
		name  string
		build func(s *script)
		want  []Type
		ends  []CompactionEnd
	}{
		{"closed bracket", func(s *script) {
			s.toolTurn(1)
			start(s, "k1", nil)
			s.append(TypeCompactionEnd, CompactionEnd{CompactionID: "k1", Error: "the model failed"})
		}, nil, nil},
		{"manual, killed during the summary", func(s *script) {
			s.toolTurn(1)
			start(s, "k1", nil)
		}, []Type{TypeCompactionEnd}, []CompactionEnd{{CompactionID: "k1", Error: CompactionInterrupted}}},
		{"manual, killed after the checkpoint", func(s *script) {
			s.toolTurn(1)
			start(s, "k1", nil)
			summarize(s, "k1")
		}, []Type{TypeCompactionEnd}, []CompactionEnd{{CompactionID: "k1"}}},
		{"pressure, inside the open turn", func(s *script) {
			s.toolTurn(1)
			s.startTurn()
			start(s, "k2", turn(2))
		}, []Type{TypeCompactionEnd, TypeTurnEnd}, []CompactionEnd{{CompactionID: "k2", Turn: turn(2), Error: CompactionInterrupted}}},
		{"dead bracket before an end-seed, and a live one", func(s *script) {
			s.toolTurn(1)
			start(s, "k1", nil)
			s.append(TypeEndSeed, EndSeed{})
			start(s, "k2", nil)
		}, []Type{TypeCompactionEnd, TypeCompactionEnd}, []CompactionEnd{
			{CompactionID: "k1", Error: CompactionInterrupted}, {CompactionID: "k2", Error: CompactionInterrupted}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := newTestLog()
			s := newScript(t, l)
			tt.build(s)
			n := l.Len()
			loaded, err := Load(Header{ID: "s1"}, l.Events(0, n), Options{Clock: counterClock()})
			if err != nil {
				t.Fatal(err)
			}
			got, err := loaded.Repair()
			if err != nil {
				t.Fatal(err)
			}
			var types []Type
			var ends []CompactionEnd
			for _, ev := range got {
				types = append(types, ev.Type)
				if ev.Type == TypeCompactionEnd {
					ends = append(ends, mustDecode[CompactionEnd](t, ev))
				}
			}
			if !slices.Equal(types, tt.want) {
				t.Fatalf("closers %v, want %v", types, tt.want)
			}
			if !slices.EqualFunc(ends, tt.ends, sameEnd) {
				t.Fatalf("ends %+v, want %+v", ends, tt.ends)
			}
			if err := CheckInvariants(loaded.Events(0, loaded.Len())); err != nil {
				t.Fatalf("repaired log breaks invariants: %v", err)
			}
			if again, err := loaded.Repair(); err != nil || again != nil {
				t.Fatalf("second repair: %v %v", again, err)
			}
			if open := compactionClosers(loaded.Events(0, loaded.Len())); open != nil {
				t.Fatalf("brackets still open: %+v", open)
			}
		})
	}
}

// summarize lands compaction id's summary and the checkpoint replacing the
// whole surface, as a compaction does before its end.
func summarize(s *script, id string) {
	s.t.Helper()
	surface := s.l.Surface()
	first, last := surface[0], surface[len(surface)-1]
	_, err := s.l.AppendGroup(func(next int64) ([]Draft, error) {
		return []Draft{
			{Type: TypeCompactionSum, Data: CompactionSummary{CompactionID: id, Summary: []llm.ContentBlock{llm.Text("sum")},
				ShadowedRange: SeqRange{Start: first, End: last}, ShadowedSeqs: surface, Provider: "p", Model: "m"}},
			{Type: TypeUserMessage, Data: llm.Message{ID: "cp-" + id, Role: llm.RoleUser, Content: []llm.ContentBlock{llm.Text("checkpoint")},
				Source: llm.Source{Kind: llm.SourcePlugin, Plugin: llm.PluginCompact, CompactionID: id}},
				SurfaceOp: Replace(first, last), SourceEventSeqs: append([]int64{next - 1, next}, surface...)},
		}, nil
	})
	if err != nil {
		s.t.Fatalf("summary: %v", err)
	}
}

func mustDecode[T any](t *testing.T, ev Event) T {
	t.Helper()
	v, err := Decode[T](ev)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func sameEnd(a, b CompactionEnd) bool {
	return a.CompactionID == b.CompactionID && a.Error == b.Error &&
		(a.Turn == nil) == (b.Turn == nil) && (a.Turn == nil || *a.Turn == *b.Turn)
}
