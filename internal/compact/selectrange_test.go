package compact_test

import (
	"reflect"
	"strings"
	"testing"

	"harness/internal/compact"
	"harness/internal/llm"
)

func TestSelectRange(t *testing.T) {
	t.Parallel()
	// nodes gives each surface node a name; the range is reported by name.
	tests := []struct {
		name   string
		build  func(b *logBuilder) []string
		retain int64
		want   []string // nil: nothing to compact
	}{
		{"retain 0 keeps the newest unit", func(b *logBuilder) []string {
			b.toolTurn(1, "go", "c1", "result", "done")
			return []string{"u1", "call", "result", "reply"}
		}, 0, []string{"u1", "call", "result"}},
		{"the cut moves off a tool result", func(b *logBuilder) []string {
			b.toolTurn(1, "go", "c1", strings.Repeat("r", 400), "done")
			return []string{"u1", "call", "result", "reply"}
		}, 50, []string{"u1"}},
		{"parallel calls stay with their results", func(b *logBuilder) []string {
			b.turn(1)
			b.step(1, 1)
			b.user("go")
			b.assistant(1, 1, nil, nil, llm.ToolCall("c1", "emit", "{}"), llm.ToolCall("c2", "emit", "{}"))
			b.call(1, 1, "c1")
			b.call(1, 1, "c2")
			b.result(1, 1, "c1", llm.Text("one"))
			b.result(1, 1, "c2", llm.Text("two"))
			b.endStep(1, 1)
			b.endTurn(1)
			return []string{"u1", "calls", "r1", "r2"}
		}, 0, []string{"u1"}},
		{"retain covers everything", func(b *logBuilder) []string {
			b.toolTurn(1, "go", "c1", "result", "done")
			return []string{"u1", "call", "result", "reply"}
		}, 1000, nil},
		{"one tool pair is indivisible", func(b *logBuilder) []string {
			b.turn(1)
			b.step(1, 1)
			b.assistant(1, 1, nil, nil, llm.ToolCall("c1", "emit", "{}"))
			b.call(1, 1, "c1")
			b.result(1, 1, "c1", llm.Text(strings.Repeat("r", 4000)))
			return []string{"call", "result"}
		}, 0, nil},
		{"one message", func(b *logBuilder) []string {
			b.user("go")
			return []string{"u1"}
		}, 0, nil},
		{"empty", func(b *logBuilder) []string { return nil }, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := newLog(t)
			names := tt.build(b)
			m := compact.NewMeter().Measure(b.l, 0)
			if len(names) != len(m.Nodes) {
				t.Fatalf("%d names for %d nodes", len(names), len(m.Nodes))
			}
			r, ok := compact.SelectRange(m, tt.retain)
			if !ok {
				if tt.want != nil {
					t.Fatalf("nothing selected, want %v", tt.want)
				}
				return
			}
			var got []string
			var tokens int64
			for i := r.StartIdx; i <= r.EndIdx; i++ {
				got = append(got, names[i])
				tokens += m.Nodes[i].Tokens
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("selected %v, want %v", got, tt.want)
			}
			surface := b.l.Surface()
			if r.Start != surface[0] || r.End != surface[r.EndIdx] || !reflect.DeepEqual(r.Seqs, surface[:r.EndIdx+1]) || r.Tokens != tokens {
				t.Fatalf("range %+v, surface %v", r, surface)
			}
		})
	}
}
