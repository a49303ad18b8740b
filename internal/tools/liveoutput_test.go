package tools

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

type emitted struct{ stream, text string }

func collectEmits() (*[]emitted, func(ctx context.Context, stream, text string), *sync.Mutex) {
	var mu sync.Mutex
	var out []emitted
	return &out, func(_ context.Context, stream, text string) {
		mu.Lock()
		out = append(out, emitted{stream, text})
		mu.Unlock()
	}, &mu
}

// Within one interval only the first write is emitted at once; the rest is
// batched (consecutive same-stream text merged, order kept) until the flush.
func TestLiveOutputThrottles(t *testing.T) {
	t.Parallel()
	out, emit, mu := collectEmits()
	l := newLiveOutput(t.Context(), time.Hour, 0, emit)
	var want strings.Builder
	for i := range 1000 {
		stream := "stdout"
		if i%100 == 99 {
			stream = "stderr"
		}
		text := string(rune('a' + i%26))
		l.write(stream, text)
		if stream == "stdout" {
			want.WriteString(text)
		}
	}
	mu.Lock()
	before := len(*out)
	mu.Unlock()
	if before != 1 {
		t.Fatalf("%d emits before the interval passed, want 1 (leading edge)", before)
	}
	l.close()
	l.write("stdout", "dropped after close")
	var got strings.Builder
	prev := ""
	for i, e := range *out {
		if i > 1 && e.stream == prev {
			t.Fatalf("adjacent segments of the same stream were not merged at %d", i)
		}
		prev = e.stream
		if e.stream == "stdout" {
			got.WriteString(e.text)
		}
	}
	if got.String() != want.String() {
		t.Fatalf("stdout reassembled wrongly: %d bytes, want %d", got.Len(), want.Len())
	}
	// 1 leading + 10 stdout runs + 10 stderr runs interleaved (the first run
	// is split by the leading emit).
	if len(*out) != 21 {
		t.Fatalf("%d emits, want 21", len(*out))
	}
}

// The timer flushes batched output without waiting for close.
func TestLiveOutputTimerFlush(t *testing.T) {
	t.Parallel()
	done := make(chan emitted, 10)
	l := newLiveOutput(t.Context(), 10*time.Millisecond, 0, func(_ context.Context, s, text string) { done <- emitted{s, text} })
	l.write("stdout", "first")
	l.write("stdout", "second")
	if e := waitFor(t, done, "leading emit"); e.text != "first" {
		t.Fatalf("leading %q", e.text)
	}
	if e := waitFor(t, done, "timer flush"); e.text != "second" {
		t.Fatalf("timer flush %q", e.text)
	}
	l.close()
}

// The byte cap stops a flood, says so once, and never splits a rune.
func TestLiveOutputCap(t *testing.T) {
	t.Parallel()
	out, emit, _ := collectEmits()
	l := newLiveOutput(t.Context(), time.Hour, 10, emit)
	l.write("stdout", "ééééééé") // 14 bytes
	l.write("stdout", "more")
	l.close()
	var all string
	for _, e := range *out {
		all += e.text
	}
	if all != "ééééé"+liveTruncatedNote {
		t.Fatalf("got %q", all)
	}
}
