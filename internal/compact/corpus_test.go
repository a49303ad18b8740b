package compact_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"harness/internal/compact"
	"harness/internal/llm"
	"harness/internal/session"
)

// readCorpus reads a recorded DeepSeek Harness log (testdata/README.md):
// packed chunk rows are unpacked to one assistant/chunk per delta, and the
// upstream-only shapes are converted the way an importer would (title
// source object, the "{{tools}}" placeholder, unknown types ignorable).
func readCorpus(t *testing.T, name string) []session.Event {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	packed := map[string]llm.ChunkType{
		"reasoning-chunks": llm.ChunkReasoningDelta,
		"text-chunks":      llm.ChunkTextDelta,
		"tool-call-chunks": llm.ChunkToolCallDelta,
	}
	var events []session.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var row struct {
			Type string          `json:"type"`
			Seq0 int64           `json:"seq0"`
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(line, &row); err != nil {
			t.Fatal(err)
		}
		switch {
		case row.Type == "session":
		case packed[row.Type] != "":
			var p struct {
				Turn, Step, Index int
				Texts, Args       []string
				ID, Name          string
			}
			if err := json.Unmarshal(row.Data, &p); err != nil {
				t.Fatal(err)
			}
			parts := p.Texts
			if row.Type == "tool-call-chunks" {
				parts = p.Args
			}
			for k, part := range parts {
				c := llm.Chunk{Type: packed[row.Type], Index: p.Index, Text: part}
				if c.Type == llm.ChunkToolCallDelta {
					c.Text, c.ArgumentsDelta = "", part
					if k == 0 {
						c.ID, c.Name = p.ID, p.Name
					}
				}
				data, _ := json.Marshal(session.AssistantChunk{Turn: p.Turn, Step: p.Step, Chunk: c})
				events = append(events, session.Event{Seq: row.Seq0 + int64(k), Type: session.TypeAssistantChunk, Data: data})
			}
		default:
			ev, err := session.UnmarshalEvent(line)
			if err != nil {
				t.Fatal(err)
			}
			events = append(events, importUpstream(t, ev))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return events
}

func importUpstream(t *testing.T, ev session.Event) session.Event {
	t.Helper()
	var m map[string]any
	switch {
	case ev.Type == session.TypeSessionTitle || ev.Type == session.TypeRequestHeader:
		if err := json.Unmarshal(ev.Data, &m); err != nil {
			t.Fatal(err)
		}
		if src, ok := m["source"].(map[string]any); ok {
			m["source"] = src["kind"]
		}
		delete(m, "messageSeqs")
		if h, ok := m["header"].(map[string]any); ok {
			if _, placeholder := h["tools"].(string); placeholder {
				delete(h, "tools")
			}
		}
		ev.Data, _ = json.Marshal(m)
	case !session.KnownTypes[ev.Type]:
		ev.Ignorable = true
	}
	return ev
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
