package render_test

import (
	"strings"
	"testing"

	"harness/internal/llm"
	"harness/internal/render"
	"harness/internal/session"
)

// streamLog is a log with one text block streamed as deltas 50 ms apart
// (plus an unrelated event in the middle, as a message queued meanwhile).
func streamLog(t testing.TB, deltas []string) (*session.Log, []session.Event) {
	t.Helper()
	now := int64(1_000_000)
	l := session.New(session.Header{ID: "fixture"}, session.Options{Clock: func() int64 { return now }})
	must := func(_ session.Event, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(l.Append(session.TypeTurnStart, session.TurnStart{Turn: 1}))
	must(l.Append(session.TypeStepStart, session.StepBoundary{Turn: 1, Step: 1}))
	must(l.Append(session.TypeAssistantChunk, session.AssistantChunk{Turn: 1, Step: 1, Chunk: llm.Chunk{Type: llm.ChunkBlockStart, Index: 0, BlockType: llm.BlockText}}))
	for i, d := range deltas {
		now += 50
		if i == len(deltas)/2 {
			must(l.Append(session.TypeTodoWrite, session.TodoWrite{Todos: []session.Todo{{Content: "x", Status: session.TodoPending}}}))
		}
		must(l.Append(session.TypeAssistantChunk, session.AssistantChunk{Turn: 1, Step: 1, Chunk: llm.Chunk{Type: llm.ChunkTextDelta, Index: 0, Text: d}}))
	}
	return l, l.Events(0, l.Len())
}

func TestPreviewBoundedAndDeterministic(t *testing.T) {
	t.Parallel()
	var deltas []string
	for i := range 40 {
		if i%10 == 0 {
			deltas = append(deltas, "\n\n**bold** ")
		}
		deltas = append(deltas, "word ")
	}
	l, evs := streamLog(t, deltas)
	md := render.NewMarkdown()
	// previews follows the stream with a projection primed from the log
	// up to from (a topic opened, or a page reloaded, mid-stream).
	previews := func(from int) map[int64]string {
		p := render.NewProjection(md, "fixture", l, int64(from), render.ProjectionOptions{})
		out := map[int64]string{}
		for _, ev := range evs[from:] {
			if h := live(t, p, ev, owner); strings.Contains(h, `data-op="preview"`) {
				out[ev.Seq] = h
			}
		}
		return out
	}
	forward := previews(0)
	// Every 50 ms for 44 deltas is 2.2 s of stream: a preview at most every
	// 250 ms, so 8 of them.
	if len(forward) != 8 {
		t.Fatalf("got %d previews, want 8: %v", len(forward), keys(forward))
	}
	var last int64 = -1
	for _, ev := range evs {
		if _, ok := forward[ev.Seq]; !ok {
			continue
		}
		if last >= 0 && ev.Time-last < 250 {
			t.Errorf("previews at %d and %d ms are closer than 250 ms", last, ev.Time)
		}
		last = ev.Time
		// The preview is the markdown of the text so far.
		var text strings.Builder
		for _, e := range evs[:ev.Seq+1] {
			if c, err := session.Decode[session.AssistantChunk](e); err == nil && e.Type == session.TypeAssistantChunk {
				text.WriteString(c.Chunk.Text)
			}
		}
		if !strings.Contains(forward[ev.Seq], md.Render(text.String())) || !strings.Contains(forward[ev.Seq], `data-target="b-1-1-0"`) {
			t.Errorf("seq %d: preview %q is not the markdown of %q", ev.Seq, forward[ev.Seq], text.String())
		}
	}
	// A projection primed mid-stream (a reconnect, a topic opened late)
	// gives the same previews at the same seqs from there on.
	for _, from := range []int{3, len(evs) / 2, len(evs) - 3} {
		later := previews(from)
		for s, h := range forward {
			if s < int64(from) {
				continue
			}
			if later[s] != h {
				t.Errorf("primed at %d: seq %d: previews differ", from, s)
			}
		}
		for s := range later {
			if _, ok := forward[s]; !ok {
				t.Errorf("primed at %d: extra preview at %d", from, s)
			}
		}
	}
}

// TestPreviewNeedsBlockStart: a projection that did not see the block's
// start (nothing primed) shows the raw deltas only.
func TestPreviewNeedsBlockStart(t *testing.T) {
	t.Parallel()
	_, evs := streamLog(t, []string{"a ", "b ", "c ", "d ", "e ", "f ", "g "})
	p := newLive(nil, 0, render.ProjectionOptions{})
	for _, ev := range evs[3:] {
		if h := live(t, p, ev, owner); strings.Contains(h, "preview") {
			t.Fatalf("seq %d: %q", ev.Seq, h)
		}
	}
}

func keys(m map[int64]string) []int64 {
	var out []int64
	for k := range m {
		out = append(out, k)
	}
	return out
}
