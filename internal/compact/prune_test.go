package compact_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"harness/internal/compact"
	"harness/internal/llm"
	"harness/internal/session"
)

func TestPruneContent(t *testing.T) {
	t.Parallel()
	p, err := compact.NewPruner(compact.PrunerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	img := llm.ContentBlock{Type: llm.BlockImage, Attachment: "a1"}
	tests := []struct {
		name   string
		in     []llm.ContentBlock
		pruned bool
		want   []llm.ContentBlock
	}{
		{"at the threshold", []llm.ContentBlock{llm.Text(strings.Repeat("x", 8192))}, false, nil},
		{"one long block", []llm.ContentBlock{llm.Text(strings.Repeat("h", 4096) + strings.Repeat("m", 5000) + strings.Repeat("t", 1024))}, true,
			[]llm.ContentBlock{llm.Text(strings.Repeat("h", 4096) + compact.PruneMarker + strings.Repeat("t", 1024))}},
		{"code points, not bytes", []llm.ContentBlock{llm.Text(strings.Repeat("é", 4096) + strings.Repeat("😀", 5000) + strings.Repeat("ü", 1024))}, true,
			[]llm.ContentBlock{llm.Text(strings.Repeat("é", 4096) + compact.PruneMarker + strings.Repeat("ü", 1024))}},
		{"blocks and an image", []llm.ContentBlock{
			llm.Text(strings.Repeat("a", 3000)), img, llm.Text(strings.Repeat("b", 3000)), llm.Text(strings.Repeat("c", 3000)),
		}, true, []llm.ContentBlock{
			llm.Text(strings.Repeat("a", 3000)), img, llm.Text(strings.Repeat("b", 1096) + compact.PruneMarker), llm.Text(strings.Repeat("c", 1024)),
		}},
		{"a block inside the cut is dropped", []llm.ContentBlock{
			llm.Text(strings.Repeat("a", 4096)), llm.Text(strings.Repeat("b", 5000)), llm.Text(strings.Repeat("c", 1024)),
		}, true, []llm.ContentBlock{
			llm.Text(strings.Repeat("a", 4096)), llm.Text(compact.PruneMarker), llm.Text(strings.Repeat("c", 1024)),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, pruned := p.PruneContent(tt.in)
			if pruned != tt.pruned || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("pruned %v, got %d blocks, want %d", pruned, len(got), len(tt.want))
			}
			if pruned {
				n := 0
				for _, b := range got {
					n += utf8.RuneCountInString(b.Text)
				}
				if n != 4096+1024+utf8.RuneCountInString(compact.PruneMarker) {
					t.Fatalf("%d code points kept", n)
				}
			}
		})
	}
	if _, err := compact.NewPruner(compact.PrunerOptions{ThresholdChars: 8192, HeadChars: 5000, TailChars: 5000}); err == nil {
		t.Fatal("head + tail above the threshold accepted")
	}
}

func TestPruneLog(t *testing.T) {
	t.Parallel()
	b := newLog(t)
	b.toolTurn(1, "go", "c1", strings.Repeat("r", 20000), "done")
	b.turn(2)
	b.step(2, 1)
	b.assistant(2, 1, nil, nil, llm.ToolCall("c2", "emit", "{}"))
	b.call(2, 1, "c2")
	b.result(2, 1, "c2", llm.Text("short"))
	b.endStep(2, 1)
	before := b.l.Surface()
	oldEv, _ := b.l.Event(before[2]) // c1's result
	gen := b.l.ReplaceGeneration()

	p, err := compact.NewPruner(compact.PrunerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.PruneLog(b.l)
	if err != nil {
		t.Fatal(err)
	}
	if res.Pruned != 1 || res.CharsRemoved != 20000-4096-1024-utf8.RuneCountInString(compact.PruneMarker) || res.TokensSaved <= 0 {
		t.Fatalf("result %+v", res)
	}
	events := b.l.Events(oldEv.Seq+1, b.l.Len())
	tail := events[len(events)-2:]
	if tail[0].Type != session.TypeCompactionPrune || tail[1].Type != session.TypeToolResult {
		t.Fatalf("appended %s, %s", tail[0].Type, tail[1].Type)
	}
	pr, _ := session.Decode[session.CompactionPrune](tail[0])
	oldRes, _ := session.Decode[session.ToolResult](oldEv)
	want := session.CompactionPrune{ShadowedRange: session.SeqRange{Start: oldEv.Seq, End: oldEv.Seq}, ShadowedSeqs: []int64{oldEv.Seq},
		ShadowedTokenCount: compact.EstimateMessage(oldRes.Message)}
	if !reflect.DeepEqual(pr, want) {
		t.Fatalf("prune %+v, want %+v", pr, want)
	}
	repl := tail[1]
	if repl.SurfaceOp.Op != session.OpReplace || repl.SurfaceOp.Start != oldEv.Seq || repl.SurfaceOp.End != oldEv.Seq ||
		!reflect.DeepEqual(repl.SourceEventSeqs, []int64{oldEv.Seq}) {
		t.Fatalf("replacement envelope %+v %v", repl.SurfaceOp, repl.SourceEventSeqs)
	}
	newRes, _ := session.Decode[session.ToolResult](repl)
	text := newRes.Message.Content[0].Content[0].Text
	if !strings.Contains(text, compact.PruneMarker) || utf8.RuneCountInString(text) != 4096+1024+utf8.RuneCountInString(compact.PruneMarker) {
		t.Fatalf("pruned text of %d code points", utf8.RuneCountInString(text))
	}
	// Identical except the content: same ids, turn/step, meta.
	newRes.Message.Content[0].Content, oldRes.Message.Content[0].Content = nil, nil
	if !reflect.DeepEqual(newRes, oldRes) || !json.Valid(newRes.Meta) || string(newRes.Meta) != `{"exit":0}` {
		t.Fatalf("replacement changed more than the content:\n%+v\n%+v", newRes, oldRes)
	}
	after := b.l.Surface()
	if after[2] != repl.Seq || len(after) != len(before) || b.l.ReplaceGeneration() != gen+1 {
		t.Fatalf("surface %v -> %v", before, after)
	}

	// One pass converges: nothing left to prune.
	n := b.l.Len()
	if res, err := p.PruneLog(b.l); err != nil || res.Pruned != 0 || b.l.Len() != n {
		t.Fatalf("second pass %+v %v", res, err)
	}
	b.endTurn(2)
	if err := session.CheckInvariants(b.l.Events(0, b.l.Len())); err != nil {
		t.Fatal(err)
	}
}
