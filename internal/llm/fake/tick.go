package fake

import (
	"bytes"
	"context"
	"math"
	"strconv"
	"strings"
	"time"

	"harness/internal/llm"
)

// Tick is an in-process provider for load measurements: it streams text
// deltas at a fixed pace, each carrying the time it was emitted
// ("t=<unix ns>;"), so a client can measure the latency from the provider to
// its socket with a clock shared on one machine. The number of deltas comes
// from a "long: N" prompt (default Chunks).
type Tick struct {
	Name   string
	Every  time.Duration // pause before each delta
	Chunks int
}

// TickStamp is the prefix of every delta's text.
const TickStamp = "t="

// Info describes the route.
func (p Tick) Info() llm.ProviderInfo {
	return llm.ProviderInfo{Name: p.Name, Label: "Tick (load test)", DefaultModel: "tick",
		Models: []llm.ModelInfo{{ID: "tick", Label: "Tick", ContextWindow: 1_000_000}}, Retry: llm.DefaultRetryPolicy()}
}

// Stream emits the deltas, then block-end, usage and finish.
func (p Tick) Stream(ctx context.Context, req llm.Request, emit llm.Emit) error {
	n := p.Chunks
	if len(req.Messages) > 0 {
		for i := len(req.Messages) - 1; i >= 0; i-- {
			m := req.Messages[i]
			if m.Source.Kind != llm.SourceUser {
				continue
			}
			if rest, ok := strings.CutPrefix(strings.TrimSpace(m.Text()), "long:"); ok {
				if v, err := strconv.Atoi(strings.TrimSpace(rest)); err == nil && v > 0 {
					n = v
				}
			}
			break
		}
	}
	if err := emit(llm.Chunk{Type: llm.ChunkBlockStart, Index: 0, BlockType: llm.BlockText}); err != nil {
		return err
	}
	var t *time.Ticker
	if p.Every > 0 {
		t = time.NewTicker(p.Every)
		defer t.Stop()
	}
	var text strings.Builder
	for range n {
		if t != nil {
			select {
			case <-ctx.Done():
				return &llm.Failure{Code: llm.CodeAborted, Message: "aborted"}
			case <-t.C:
			}
		}
		s := TickStamp + strconv.FormatInt(time.Now().UnixNano(), 10) + ";"
		text.WriteString(s)
		if err := emit(llm.Chunk{Type: llm.ChunkTextDelta, Index: 0, Text: s}); err != nil {
			return err
		}
	}
	final := llm.Text(text.String())
	for _, c := range []llm.Chunk{
		{Type: llm.ChunkBlockEnd, Index: 0, Block: &final},
		{Type: llm.ChunkUsage, Usage: &llm.Usage{InputTokens: 10, OutputTokens: int64(n)}},
		llm.Finish(llm.FinishStop, nil),
	} {
		if err := emit(c); err != nil {
			return err
		}
	}
	return nil
}

// ParseTick reads the emission time stamped in a tick delta's event data
// (the raw JSON of an assistant/chunk event) without decoding it or
// copying it: load clients call it for every push they time.
func ParseTick(data []byte) (time.Time, bool) {
	if !bytes.Contains(data, []byte(`"text-delta"`)) {
		return time.Time{}, false
	}
	marker := []byte(`"text":"` + TickStamp)
	i := bytes.Index(data, marker)
	if i < 0 {
		return time.Time{}, false
	}
	var ns int64
	digits := 0
	for _, c := range data[i+len(marker):] {
		if c == ';' {
			if digits == 0 {
				return time.Time{}, false
			}
			return time.Unix(0, ns), true
		}
		d := int64(c - '0')
		if c < '0' || c > '9' || ns > (math.MaxInt64-d)/10 {
			return time.Time{}, false
		}
		ns, digits = 10*ns+d, digits+1
	}
	return time.Time{}, false
}
