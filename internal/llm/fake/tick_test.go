package fake

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"harness/internal/llm"
)

func TestTick(t *testing.T) {
	t.Parallel()
	p := Tick{Name: "tick", Every: time.Millisecond, Chunks: 3}
	var got []llm.Chunk
	req := llm.Request{Messages: []llm.Message{llm.UserText("long: 5", llm.Source{Kind: llm.SourceUser})}}
	before := time.Now()
	if err := llm.Run(context.Background(), p, req, func(c llm.Chunk) error { got = append(got, c); return nil }); err != nil {
		t.Fatal(err)
	}
	deltas := 0
	for _, c := range got {
		if c.Type != llm.ChunkTextDelta {
			continue
		}
		deltas++
		data, _ := json.Marshal(map[string]any{"turn": 1, "step": 1, "chunk": c})
		at, ok := ParseTick(data)
		if !ok || at.Before(before) || at.After(time.Now()) {
			t.Fatalf("stamp of %q: %v %v", c.Text, at, ok)
		}
	}
	if deltas != 5 || got[len(got)-1].Type != llm.ChunkFinish {
		t.Fatalf("%d deltas, last %v", deltas, got[len(got)-1].Type)
	}
	for _, data := range []string{
		`{"chunk":{"type":"text-delta","text":"hello"}}`,
		`{"chunk":{"type":"text-delta","text":"t=;"}}`,
		`{"chunk":{"type":"text-delta","text":"t=12a;"}}`,
		`{"chunk":{"type":"text-delta","text":"t=1234"}}`,
		`{"chunk":{"type":"text-delta","text":"t=9223372036854775808;"}}`, // past int64
		`{"chunk":{"type":"block-end","text":"t=1;"}}`,
	} {
		if at, ok := ParseTick([]byte(data)); ok {
			t.Errorf("ParseTick(%s) = %v, want no stamp", data, at)
		}
	}
	if at, ok := ParseTick([]byte(`{"chunk":{"type":"text-delta","text":"t=9223372036854775807;"}}`)); !ok || at.UnixNano() != 9223372036854775807 {
		t.Errorf("largest stamp: %v %v", at.UnixNano(), ok)
	}
}
