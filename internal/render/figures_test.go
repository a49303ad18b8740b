package render_test

import (
	"math"
	"strings"
	"testing"

	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/llm/openai"
	"harness/internal/render"
	"harness/internal/session"
	"harness/internal/testkit"
)

// timedRun builds a run whose events carry the given times (ms), so a case
// states its timings outright instead of counting seqs.
type timedRun struct {
	run
}

func (r *timedRun) at(ms int64, typ session.Type, data any) *timedRun {
	r.t.Helper()
	r.add(typ, data)
	r.evs[len(r.evs)-1].Time = ms
	return r
}

func (r *timedRun) chunkAt(ms int64, turn, step int, c llm.Chunk) *timedRun {
	return r.at(ms, session.TypeAssistantChunk, session.AssistantChunk{Turn: turn, Step: step, Chunk: c})
}

func answerMsg(turn, step int, id string, u *llm.Usage, price *llm.Price) session.AssistantMessage {
	return session.AssistantMessage{Turn: turn, Step: step, Usage: u, Price: price,
		Message: llm.Message{ID: id, Role: llm.RoleAssistant, Content: []llm.ContentBlock{llm.Text("ok")},
			Source: llm.Source{Kind: llm.SourceModel, Provider: "p", Model: "m"}}}
}

var (
	price = &llm.Price{Input: 2, CachedInput: 0.5, Output: 8}
	free  = &llm.Price{}
)

// TestTurnFigures checks the usage row's figures, folded and live (one
// projection), on event runs: duration from turn/start to turn/end, TTFT
// from the first request's start (step/start, or llm/retry-started after
// a failed attempt) to its first delta, tokens summed over the requests,
// and the cost only when every request carried a price.
func TestTurnFigures(t *testing.T) {
	t.Parallel()
	u1 := &llm.Usage{InputTokens: 1000, CacheReadTokens: 3000, OutputTokens: 500}
	u2 := &llm.Usage{InputTokens: 200, OutputTokens: 100}
	cases := []struct {
		name  string
		build func(r *timedRun)
		want  render.UsageItem // the figures compared (not Base)
		html  []string         // in the rendered row
		not   []string         // absent from it
	}{
		{"two priced requests", func(r *timedRun) {
			r.at(10_000, session.TypeTurnStart, session.TurnStart{Turn: 1})
			r.at(10_050, session.TypeStepStart, session.StepBoundary{Turn: 1, Step: 1})
			r.chunkAt(10_300, 1, 1, llm.Chunk{Type: llm.ChunkBlockStart, Index: 0, BlockType: llm.BlockText})
			r.chunkAt(10_870, 1, 1, llm.Chunk{Type: llm.ChunkTextDelta, Index: 0, Text: "o"})
			r.chunkAt(10_900, 1, 1, llm.Chunk{Type: llm.ChunkTextDelta, Index: 0, Text: "k"})
			r.at(11_000, session.TypeAssistantMessage, answerMsg(1, 1, "a1", u1, price))
			r.at(11_100, session.TypeStepStart, session.StepBoundary{Turn: 1, Step: 2})
			r.chunkAt(11_200, 1, 2, llm.Chunk{Type: llm.ChunkTextDelta, Index: 0, Text: "later"})
			r.at(11_500, session.TypeAssistantMessage, answerMsg(1, 2, "a2", u2, price))
			r.at(22_400, session.TypeTurnEnd, session.TurnEnd{Turn: 1, Reason: session.TurnEndReason{Kind: session.ReasonCompleted}})
		}, render.UsageItem{Turn: 1, Requests: 2, Priced: 2, DurationMs: 12_400, HasDuration: true, TTFTMs: 820, HasTTFT: true,
			Usage: llm.Usage{InputTokens: 1200, CacheReadTokens: 3000, OutputTokens: 600},
			// 1200×2 + 3000×0.5 + 600×8 = 8,700 per million tokens.
			Cost: 0.0087},
			[]string{"12.4 s", "TTFT 820 ms", "4.2k in", "3.0k cached", "600 out", "2 requests", "$0.0087"}, nil},
		{"no prices: no cost", func(r *timedRun) {
			r.at(0, session.TypeTurnStart, session.TurnStart{Turn: 2})
			r.at(10, session.TypeStepStart, session.StepBoundary{Turn: 2, Step: 1})
			r.chunkAt(90, 2, 1, llm.Chunk{Type: llm.ChunkReasoningDelta, Index: 0, Text: "hm"})
			r.at(100, session.TypeAssistantMessage, answerMsg(2, 1, "a1", u2, nil))
			r.at(65_000, session.TypeTurnEnd, session.TurnEnd{Turn: 2, Reason: session.TurnEndReason{Kind: session.ReasonCompleted}})
		}, render.UsageItem{Turn: 2, Requests: 1, DurationMs: 65_000, HasDuration: true, TTFTMs: 80, HasTTFT: true, Usage: *u2},
			[]string{"1m 05s", "TTFT 80 ms", "200 in", "0 cached", "100 out"}, []string{"$", "requests"}},
		{"a free route costs $0", func(r *timedRun) {
			r.at(0, session.TypeTurnStart, session.TurnStart{Turn: 1})
			r.at(0, session.TypeStepStart, session.StepBoundary{Turn: 1, Step: 1})
			r.chunkAt(5, 1, 1, llm.Chunk{Type: llm.ChunkToolCallDelta, Index: 0, ArgumentsDelta: "{"})
			r.at(9, session.TypeAssistantMessage, answerMsg(1, 1, "a1", u1, free))
			r.at(9, session.TypeTurnEnd, session.TurnEnd{Turn: 1, Reason: session.TurnEndReason{Kind: session.ReasonCompleted}})
		}, render.UsageItem{Turn: 1, Requests: 1, Priced: 1, DurationMs: 9, HasDuration: true, TTFTMs: 5, HasTTFT: true, Usage: *u1},
			[]string{"9 ms", "TTFT 5 ms", "$0.0000"}, nil},
		{"partly priced: no cost", func(r *timedRun) {
			r.at(0, session.TypeTurnStart, session.TurnStart{Turn: 1})
			r.at(1, session.TypeAssistantMessage, answerMsg(1, 1, "a1", u1, price))
			r.at(2, session.TypeAssistantMessage, answerMsg(1, 2, "a2", u2, nil))
			r.at(3, session.TypeTurnEnd, session.TurnEnd{Turn: 1, Reason: session.TurnEndReason{Kind: session.ReasonCompleted}})
		}, render.UsageItem{Turn: 1, Requests: 2, Priced: 1, DurationMs: 3, HasDuration: true,
			Usage: u1.Add(*u2), Cost: price.Cost(*u1)},
			[]string{"3 ms"}, []string{"$", "TTFT"}},
		{"retried request: TTFT from the retry", func(r *timedRun) {
			r.at(0, session.TypeTurnStart, session.TurnStart{Turn: 4})
			r.at(100, session.TypeStepStart, session.StepBoundary{Turn: 4, Step: 1})
			r.at(200, session.TypeLLMRetry, session.LLMRetry{RetryID: "r1", Turn: 4, Step: 1, Retry: 1, DelayMs: 2000, Failure: llm.Failure{Code: llm.CodeRateLimit}})
			r.at(2_200, session.TypeLLMRetryStarted, session.LLMRetryStarted{RetryID: "r1", Turn: 4, Step: 1, Retry: 1})
			r.chunkAt(2_450, 4, 1, llm.Chunk{Type: llm.ChunkTextDelta, Index: 0, Text: "x"})
			// A later step's retry does not move the measured TTFT.
			r.at(2_500, session.TypeAssistantMessage, answerMsg(4, 1, "a1", u2, price))
			r.at(2_600, session.TypeLLMRetryStarted, session.LLMRetryStarted{RetryID: "r2", Turn: 4, Step: 2, Retry: 1})
			r.chunkAt(2_700, 4, 2, llm.Chunk{Type: llm.ChunkTextDelta, Index: 0, Text: "y"})
			r.at(3_000, session.TypeTurnEnd, session.TurnEnd{Turn: 4, Reason: session.TurnEndReason{Kind: session.ReasonCompleted}})
		}, render.UsageItem{Turn: 4, Requests: 1, Priced: 1, DurationMs: 3_000, HasDuration: true, TTFTMs: 250, HasTTFT: true,
			Usage: *u2, Cost: price.Cost(*u2)},
			[]string{"3.0 s", "TTFT 250 ms", "$0.0012"}, nil},
		{"turn start out of reach: no duration", func(r *timedRun) {
			r.at(5, session.TypeAssistantMessage, answerMsg(7, 1, "a1", u2, price))
			r.at(9, session.TypeTurnEnd, session.TurnEnd{Turn: 7, Reason: session.TurnEndReason{Kind: session.ReasonCompleted}})
		}, render.UsageItem{Turn: 7, Requests: 1, Priced: 1, Usage: *u2, Cost: price.Cost(*u2)},
			[]string{"Turn 7", "$0.0012"}, []string{"TTFT", " ms"}},
	}
	md := render.NewMarkdown()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &timedRun{run: run{t: t}}
			c.build(r)

			// The page fold.
			tr := md.Fold(r.evs, render.FoldOptions{})
			var row *render.UsageItem
			for _, it := range tr.Items {
				if u, ok := it.(*render.UsageItem); ok {
					row = u
				}
			}
			if row == nil {
				t.Fatalf("no usage row in %d items", len(tr.Items))
			}
			got := *row
			got.Base = render.UsageItem{}.Base
			want := c.want
			want.TurnEnd = true
			if math.Abs(got.Cost-want.Cost) > 1e-12 {
				t.Errorf("cost %v, want %v", got.Cost, want.Cost)
			}
			got.Cost, want.Cost = 0, 0
			if !sameFigures(got, want) {
				t.Errorf("figures\n got %+v\nwant %+v", got, want)
			}
			page := renderItems(t, []render.Item{row})

			// The live fragment of the turn/end renders the same row.
			p := render.NewProjection(md, "s", nil, 0, render.ProjectionOptions{})
			var frag string
			for _, ev := range r.evs {
				if err := p.Apply(ev); err != nil {
					t.Fatal(err)
				}
				h, err := p.Fragment(true, "")
				if err != nil {
					t.Fatal(err)
				}
				frag = h
			}
			if !strings.Contains(frag, page) {
				t.Errorf("the live turn/end fragment lacks the page's row\nrow  %s\nfrag %s", page, frag)
			}
			for _, s := range c.html {
				if !strings.Contains(page, s) {
					t.Errorf("row lacks %q: %s", s, page)
				}
			}
			for _, s := range c.not {
				if strings.Contains(textOf(page), s) {
					t.Errorf("row has %q: %s", s, page)
				}
			}
		})
	}
}

// sameFigures compares the exported figures (the unexported open-turn
// state is not part of a row's meaning).
func sameFigures(a, b render.UsageItem) bool {
	return a.Turn == b.Turn && a.Usage == b.Usage && a.Requests == b.Requests && a.TurnEnd == b.TurnEnd &&
		a.DurationMs == b.DurationMs && a.HasDuration == b.HasDuration && a.TTFTMs == b.TTFTMs && a.HasTTFT == b.HasTTFT &&
		a.Cost == b.Cost && a.Priced == b.Priced
}

// textOf drops tags and attributes, so "not in the row" checks read the
// visible text only.
func textOf(h string) string {
	var sb strings.Builder
	in := false
	for _, r := range h {
		switch {
		case r == '<':
			in = true
		case r == '>':
			in = false
		case !in:
			sb.WriteRune(r)
		}
	}
	return sb.String()
}

// TestPriceRecordedByDriver runs a real agent on a priced route (the
// OpenAI adapter against the fake model server): the driver records the
// route's price on the assistant/message, so the folded row shows a cost
// that is usage × price.
func TestPriceRecordedByDriver(t *testing.T) {
	t.Parallel()
	srv := fake.NewServer(fake.Script{Replies: []fake.Reply{{Text: "priced answer", Usage: &fake.Usage{PromptTokens: 1000, CompletionTokens: 50, CacheHitTokens: 400}}}}, fake.WithChunkDelay(0))
	base := srv.Start(t)
	pr := &llm.Price{Input: 1, CachedInput: 0.25, Output: 4}
	p, err := openai.New(openai.Config{Name: "priced", Label: "Priced", Kind: openai.KindOpenAI, BaseURL: base, APIKey: "sk-test",
		DefaultModel: "m", Models: []llm.ModelInfo{{ID: "m", Label: "m", ContextWindow: 100_000, Price: pr}}})
	if err != nil {
		t.Fatal(err)
	}
	r := newRecorder(t, p, testkit.StackOptions{})
	r.send("ada", "hello")
	evs := r.agent.Log().Events(0, r.agent.Log().Len())
	var am *session.AssistantMessage
	for _, ev := range evs {
		if ev.Type == session.TypeAssistantMessage {
			m, err := session.Decode[session.AssistantMessage](ev)
			if err != nil {
				t.Fatal(err)
			}
			am = &m
		}
	}
	if am == nil || am.Price == nil || *am.Price != *pr || am.Usage == nil {
		t.Fatalf("assistant/message %+v: want the route's price %+v and usage", am, pr)
	}
	tr := render.NewMarkdown().Fold(evs, render.FoldOptions{})
	for _, it := range tr.Items {
		if u, ok := it.(*render.UsageItem); ok {
			if !u.ShowCost() || math.Abs(u.Cost-pr.Cost(*am.Usage)) > 1e-12 || !u.HasDuration || !u.HasTTFT {
				t.Errorf("row %+v: want the cost %v, a duration and a TTFT", u, pr.Cost(*am.Usage))
			}
			return
		}
	}
	t.Fatal("no usage row")
}
