package compact_test

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"harness/internal/compact"
	"harness/internal/importer"
	"harness/internal/session"
)

// readCorpus reads a recorded DeepSeek Harness log (testdata/README.md)
// through the importer: packed chunk rows unpacked, upstream-only shapes
// converted, unknown types ignorable.
func readCorpus(t *testing.T, name string) []session.Event {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := importer.Read(f, importer.Options{})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res.Events
}

// TestCorpusUsageAnchors replays real logs event by event: after every
// assistant/message the meter reports the provider's own usage total (the
// recorded prompts are far larger than the placeholder header the meter
// can see), later surface nodes add their heuristic price on top, and the
// incremental fold equals a fresh one at every prefix.
func TestCorpusUsageAnchors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file   string
		totals []int64 // usage totals of the assistant messages, in order
	}{
		{"bash-tool-turn.jsonl", []int64{2877 + 90, 168 + 2816 + 25}},
		{"multi-turn.jsonl", []int64{2864 + 20, 64 + 2816 + 21}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			l := session.New(session.Header{ID: "corpus"}, session.Options{})
			inc := compact.NewMeter()
			var anchors []int64
			var anchorTotal int64
			for _, ev := range readCorpus(t, tt.file) {
				if _, err := l.AppendRaw(ev); err != nil {
					t.Fatalf("append %s %d: %v", ev.Type, ev.Seq, err)
				}
				m := inc.Measure(l, 1_000_000)
				if fresh := compact.NewMeter().Measure(l, 1_000_000); !reflect.DeepEqual(m, fresh) {
					t.Fatalf("seq %d: incremental %+v != fresh %+v", ev.Seq, m, fresh)
				}
				if ev.Type == session.TypeAssistantMessage {
					if m.Baseline != compact.BaselineUsage || m.Usage == nil || m.SurfaceDeltaTokens != 0 {
						t.Fatalf("seq %d: %+v, want a usage anchor", ev.Seq, m)
					}
					if heuristic := m.HeaderTokens + m.SurfaceTokens; heuristic >= m.TotalTokens {
						t.Fatalf("seq %d: heuristic %d not below usage %d", ev.Seq, heuristic, m.TotalTokens)
					}
					anchors = append(anchors, m.TotalTokens)
					anchorTotal = m.TotalTokens
					continue
				}
				var added int64
				if ev.Type == session.TypeToolResult || ev.Type == session.TypeUserMessage {
					added = m.Nodes[len(m.Nodes)-1].Tokens
				}
				if len(anchors) > 0 && m.TotalTokens != anchorTotal+added {
					t.Fatalf("seq %d %s: total %d, want anchor %d + %d", ev.Seq, ev.Type, m.TotalTokens, anchorTotal, added)
				}
				anchorTotal = m.TotalTokens
			}
			if !reflect.DeepEqual(anchors, tt.totals) {
				t.Fatalf("anchors %v, want %v", anchors, tt.totals)
			}
			m := inc.Measure(l, 1_000_000)
			if len(m.Nodes) != len(l.Surface()) || m.TotalTokens != tt.totals[len(tt.totals)-1] {
				t.Fatalf("final %+v, surface %v", m, l.Surface())
			}
		})
	}
}
