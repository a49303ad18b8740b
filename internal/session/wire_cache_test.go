package session

import (
	"strings"
	"testing"

	"harness/internal/llm"
)

// TestHistoryWireEncodesEachMessageOnce: a request built from HistoryWire
// encodes only the messages no earlier request encoded; a replacement starts
// over; a view older than the cache still gets exactly its own messages.
func TestHistoryWireEncodesEachMessageOnce(t *testing.T) {
	t.Parallel()
	l := New(Header{ID: "s"}, Options{})
	calls := 0
	encode := func(m llm.Message) ([]byte, error) {
		calls++
		return []byte(`"` + m.Text() + `"`), nil
	}
	add := func(text string) {
		t.Helper()
		if _, err := l.AppendSurface(TypeUserMessage, llm.UserText(text, llm.Source{Kind: llm.SourceUser}), Append(), nil); err != nil {
			t.Fatal(err)
		}
	}
	joined := func(w llm.WireCache) string {
		t.Helper()
		segs, err := w.Encoded("v1", encode)
		if err != nil {
			t.Fatal(err)
		}
		var parts []string
		for _, s := range segs {
			parts = append(parts, string(s))
		}
		return strings.Join(parts, ",")
	}

	add("a")
	add("b")
	_, w1 := l.HistoryWire()
	if got := joined(w1); got != `"a","b"` || calls != 2 {
		t.Fatalf("first request %s after %d encodes", got, calls)
	}
	add("c")
	_, w2 := l.HistoryWire()
	if got := joined(w2); got != `"a","b","c"` || calls != 3 {
		t.Fatalf("second request %s after %d encodes, want 3", got, calls)
	}
	// The first view, asked again after the cache grew, is still a,b.
	if got := joined(w1); got != `"a","b"` || calls != 3 {
		t.Fatalf("older view %s after %d encodes", got, calls)
	}
	// Another dialect has its own encodings.
	if segs, _ := w2.Encoded("v2", encode); len(segs) != 1 || calls != 6 {
		t.Fatalf("second dialect: %d segments after %d encodes", len(segs), calls)
	}
	// A replacement (compaction) starts a new generation.
	surf := l.Surface()
	if _, err := l.AppendSurface(TypeUserMessage, llm.UserText("summary", llm.Source{Kind: llm.SourceUser}), Replace(surf[0], surf[1]), surf[:2]); err != nil {
		t.Fatal(err)
	}
	_, w3 := l.HistoryWire()
	if got := joined(w3); got != `"summary","c"` || calls != 8 {
		t.Fatalf("after a replacement %s after %d encodes, want 8", got, calls)
	}
	// A view from before the replacement still sends its own history.
	if got := joined(w2); got != `"a","b","c"` {
		t.Fatalf("pre-replacement view %s", got)
	}
}
