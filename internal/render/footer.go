package render

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"sync"

	"harness/internal/llm"
	"harness/internal/session"
)

// SessionFigures are a session's running totals, shown in the chat page's
// footer (docs/ui.md, "The session footer"). They are sums of the turns'
// figures rows (UsageItem.Figures), which the projection folds as it builds
// each turn's usage row, over the turns that ended: a turn counts once its
// turn/end is in the log, so the footer changes once per turn.
type SessionFigures struct {
	// Turns is how many turns ended; Steps their step/starts.
	Turns, Steps int
	// Requests counts the model requests: each runs from its step/start
	// or llm/retry-started to its assistant/message, its llm/retry (a
	// failed attempt) or its turn's end (cut off).
	Requests int
	// ModelMs sums the requests' spans; ToolMs the tool calls' (tool/call
	// to tool/result, or the turn's end).
	ModelMs, ToolMs int64
	// Streamed counts the requests that got a first delta (text,
	// reasoning or tool call); TTFTSumMs sums their start-to-first-delta.
	Streamed  int
	TTFTSumMs int64
	// StreamMs sums first-delta-to-end over the streamed requests that
	// ended with an assistant/message carrying usage; StreamOutput is
	// their output tokens.
	StreamMs, StreamOutput int64
	// Usage sums the assistant/message usages (as the usage rows do).
	Usage llm.Usage
}

// Add is the figure-wise sum.
func (f SessionFigures) Add(o SessionFigures) SessionFigures {
	return SessionFigures{
		Turns: f.Turns + o.Turns, Steps: f.Steps + o.Steps, Requests: f.Requests + o.Requests,
		ModelMs: f.ModelMs + o.ModelMs, ToolMs: f.ToolMs + o.ToolMs,
		Streamed: f.Streamed + o.Streamed, TTFTSumMs: f.TTFTSumMs + o.TTFTSumMs,
		StreamMs: f.StreamMs + o.StreamMs, StreamOutput: f.StreamOutput + o.StreamOutput,
		Usage: f.Usage.Add(o.Usage),
	}
}

// AvgTTFTMs is the mean time to first token of the streamed requests,
// rounded to the millisecond; ok is false when none streamed.
func (f SessionFigures) AvgTTFTMs() (ms int64, ok bool) {
	if f.Streamed == 0 {
		return 0, false
	}
	return int64(math.Round(float64(f.TTFTSumMs) / float64(f.Streamed))), true
}

// TokensPerSecond is StreamOutput over StreamMs: the output rate while
// the model streamed (its wait for the first token left out).
func (f SessionFigures) TokensPerSecond() (float64, bool) {
	if f.StreamMs <= 0 {
		return 0, false
	}
	return float64(f.StreamOutput) / (float64(f.StreamMs) / 1000), true
}

// TokensIn is every prompt token: input, cache reads and cache writes.
func (f SessionFigures) TokensIn() int64 {
	return f.Usage.InputTokens + f.Usage.CacheReadTokens + f.Usage.CacheWriteTokens
}

// TokensOut is the output tokens (reasoning included, as providers count).
func (f SessionFigures) TokensOut() int64 { return f.Usage.OutputTokens }

// CacheHitRatio is the cached share of the prompt tokens (cache reads
// over TokensIn), as the usage row's percentage; ok is false with no
// prompt tokens.
func (f SessionFigures) CacheHitRatio() (float64, bool) {
	in := f.TokensIn()
	if in == 0 {
		return 0, false
	}
	return float64(f.Usage.CacheReadTokens) / float64(in), true
}

// figure is one entry of the footer: its key (data-fig), raw value
// (data-value: ms, a count, a ratio; "" when there is none), text, label
// and tooltip.
type figure struct {
	key, value, text, label, title string
}

func (f SessionFigures) figures() []figure {
	count := func(n int64) string { return strconv.FormatInt(n, 10) }
	word := func(n int, one, many string) string {
		if n == 1 {
			return one
		}
		return many
	}
	num := func(v float64, ok bool) string {
		if !ok {
			return ""
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	ttft, hasTTFT := f.AvgTTFTMs()
	rate, hasRate := f.TokensPerSecond()
	hit, hasHit := f.CacheHitRatio()
	out := []figure{
		{"turns", count(int64(f.Turns)), count(int64(f.Turns)), word(f.Turns, "turn", "turns"), "Turns that ended"},
		{"steps", count(int64(f.Steps)), count(int64(f.Steps)), word(f.Steps, "step", "steps"), "Steps in those turns (each a model request and its tools)"},
		{"model-time", count(f.ModelMs), duration(f.ModelMs), "model", "Model time: the model requests' durations summed"},
		{"tool-time", count(f.ToolMs), duration(f.ToolMs), "tools", "Tool time: the tool calls' durations summed"},
		{"ttft", "", "—", "TTFT", "Average time to first token"},
		{"tokens-per-sec", num(rate, hasRate), "—", "tok/s", "Output tokens per second while streaming"},
		{"cache-hit", num(hit, hasHit), "—", "cached", "Cache-hit ratio: cached prompt tokens over all prompt tokens"},
		{"tokens-in", count(f.TokensIn()), tokens(f.TokensIn()), "in", "Prompt tokens (input, cache reads and writes)"},
		{"tokens-out", count(f.TokensOut()), tokens(f.TokensOut()), "out", "Output tokens"},
	}
	if hasTTFT {
		out[4].value, out[4].text = count(ttft), duration(ttft)
	}
	if hasRate {
		prec := 1
		if rate >= 100 {
			prec = 0
		}
		out[5].text = strconv.FormatFloat(rate, 'f', prec, 64)
	}
	if hasHit {
		out[6].text = strconv.Itoa(int(math.Round(hit*100))) + "%"
	}
	return out
}

// EventReader reads a session's events with from <= seq < to, in seq
// order; fewer (none) at the end of the log.
type EventReader func(ctx context.Context, from, to int64) ([]session.Event, error)

// LogReader reads an in-memory log.
func LogReader(l *session.Log) EventReader {
	return func(_ context.Context, from, to int64) ([]session.Event, error) { return l.Events(from, to), nil }
}

// figurePage is how many events a FigureBook reads at a time.
const figurePage = 2048

// FigureBook keeps the session figures of sessions, folded incrementally:
// per session, a figures-only projection (the same fold as the pages', the
// transcript's items left out) over the log read so far and the running
// totals after each turn/end, so the figures as of any seq are a lookup
// and a page load or a new subscriber reads only the events the book has
// not folded yet. A log only grows, so a session's events are the same
// whoever reads them (the in-memory log or the store). Safe for
// concurrent use; bounded to max sessions (any one is dropped for a new
// one: the book only saves work).
type FigureBook struct {
	mu      sync.Mutex
	max     int
	ledgers map[string]*figureLedger
}

type figureLedger struct {
	mu   sync.Mutex
	fold *Projection
	next int64 // the next seq to fold
	ends []figureMark
}

// figureMark is the totals right after the turn/end at seq.
type figureMark struct {
	seq int64
	f   SessionFigures
}

// NewFigureBook keeps the figures of at most max sessions (256 when max
// <= 0).
func NewFigureBook(max int) *FigureBook {
	if max <= 0 {
		max = 256
	}
	return &FigureBook{max: max, ledgers: map[string]*figureLedger{}}
}

// At returns session id's figures as of seq: the totals of the turns that
// ended at or before seq. read supplies the events the book has not folded
// yet (up to seq). A malformed event is skipped, as a page skips it.
func (b *FigureBook) At(ctx context.Context, id string, seq int64, read EventReader) (SessionFigures, error) {
	g := b.ledger(id)
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.next <= seq {
		evs, err := read(ctx, g.next, min(seq+1, g.next+figurePage))
		if err != nil {
			return g.at(seq), fmt.Errorf("session figures of %s: %w", id, err)
		}
		if len(evs) == 0 {
			break
		}
		for _, ev := range evs {
			if ev.Seq != g.next {
				return g.at(seq), fmt.Errorf("session figures of %s: read seq %d, want %d", id, ev.Seq, g.next)
			}
			if g.fold.apply(ev) == nil && ev.Type == session.TypeTurnEnd {
				g.ends = append(g.ends, figureMark{seq: ev.Seq, f: g.fold.totals})
			}
			g.next++
		}
	}
	return g.at(seq), nil
}

func (g *figureLedger) at(seq int64) SessionFigures {
	i := sort.Search(len(g.ends), func(i int) bool { return g.ends[i].seq > seq })
	if i == 0 {
		return SessionFigures{}
	}
	return g.ends[i-1].f
}

func (b *FigureBook) ledger(id string) *figureLedger {
	b.mu.Lock()
	defer b.mu.Unlock()
	if g, ok := b.ledgers[id]; ok {
		return g
	}
	if len(b.ledgers) >= b.max {
		for k := range b.ledgers {
			delete(b.ledgers, k)
			break
		}
	}
	p := newProjection(nil, false)
	p.figuresOnly = true
	g := &figureLedger{fold: p}
	b.ledgers[id] = g
	return g
}

// figureEvents are the events a figures-only projection folds.
var figureEvents = map[session.Type]bool{
	session.TypeTurnStart: true, session.TypeStepStart: true, session.TypeAssistantChunk: true,
	session.TypeAssistantMessage: true, session.TypeToolCall: true, session.TypeToolResult: true,
	session.TypeLLMRetry: true, session.TypeLLMRetryStarted: true, session.TypeTurnEnd: true,
}
