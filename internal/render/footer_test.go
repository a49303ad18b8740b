package render_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"harness/internal/llm"
	"harness/internal/render"
	"harness/internal/session"
)

// refFigures computes the session figures of the turns that ended in evs
// straight from docs/ui.md's definitions, independently of the
// projection: a model request runs from its step/start or
// llm/retry-started to its assistant/message, llm/retry or turn/end; a
// tool from tool/call to the tool/result naming its call (tool-result
// block) or its turn/end; TTFT to a request's first delta; tokens/s over
// the streamed requests that ended with usage.
func refFigures(t *testing.T, evs []session.Event) render.SessionFigures {
	t.Helper()
	type req struct {
		start, first int64
		streamed     bool
	}
	type turn struct {
		f     render.SessionFigures
		req   *req
		tools map[string]int64
	}
	var total render.SessionFigures
	turns := map[int]*turn{}
	get := func(n int) *turn {
		if turns[n] == nil {
			turns[n] = &turn{tools: map[string]int64{}}
		}
		return turns[n]
	}
	end := func(tu *turn, at int64, u *llm.Usage) {
		r := tu.req
		if r == nil {
			return
		}
		tu.req = nil
		tu.f.Requests++
		tu.f.ModelMs += at - r.start
		if r.streamed {
			tu.f.Streamed++
			tu.f.TTFTSumMs += r.first - r.start
			if u != nil && at > r.first {
				tu.f.StreamMs += at - r.first
				tu.f.StreamOutput += u.OutputTokens
			}
		}
	}
	for _, ev := range evs {
		switch ev.Type {
		case session.TypeStepStart, session.TypeLLMRetryStarted:
			var sb session.StepBoundary
			mustDecode(t, ev, &sb)
			tu := get(sb.Turn)
			if ev.Type == session.TypeStepStart {
				tu.f.Steps++
			}
			tu.req = &req{start: ev.Time}
		case session.TypeAssistantChunk:
			c := mustChunk(t, ev)
			switch c.Chunk.Type {
			case llm.ChunkTextDelta, llm.ChunkReasoningDelta, llm.ChunkToolCallDelta:
				if r := get(c.Turn).req; r != nil && !r.streamed {
					r.first, r.streamed = ev.Time, true
				}
			}
		case session.TypeAssistantMessage:
			var am session.AssistantMessage
			mustDecode(t, ev, &am)
			tu := get(am.Turn)
			end(tu, ev.Time, am.Usage)
			if am.Usage != nil {
				tu.f.Usage = tu.f.Usage.Add(*am.Usage)
			}
		case session.TypeLLMRetry:
			var r session.LLMRetry
			mustDecode(t, ev, &r)
			end(get(r.Turn), ev.Time, nil)
		case session.TypeToolCall:
			var c session.ToolCall
			mustDecode(t, ev, &c)
			get(c.Turn).tools[c.CallID] = ev.Time
		case session.TypeToolResult:
			var r session.ToolResult
			mustDecode(t, ev, &r)
			tu := get(r.Turn)
			for _, b := range r.Message.Content {
				if start, ok := tu.tools[b.ToolCallID]; ok && b.Type == llm.BlockToolResult {
					tu.f.ToolMs += ev.Time - start
					delete(tu.tools, b.ToolCallID)
				}
			}
			// A task call's subagent usage rolls up into its turn.
			var m struct {
				Subagent *session.SubagentMeta `json:"subagent"`
			}
			if len(r.Meta) > 0 && json.Unmarshal(r.Meta, &m) == nil && m.Subagent != nil && m.Subagent.Usage != nil {
				tu.f.Usage = tu.f.Usage.Add(*m.Subagent.Usage)
			}
		case session.TypeTurnEnd:
			var te session.TurnEnd
			mustDecode(t, ev, &te)
			tu := get(te.Turn)
			end(tu, ev.Time, nil)
			for _, start := range tu.tools {
				tu.f.ToolMs += ev.Time - start
			}
			tu.f.Turns = 1
			total = total.Add(tu.f)
			delete(turns, te.Turn)
		}
	}
	return total
}

func mustDecode(t *testing.T, ev session.Event, v any) {
	t.Helper()
	if err := json.Unmarshal(ev.Data, v); err != nil {
		t.Fatalf("event #%d: %v", ev.Seq, err)
	}
}

func mustChunk(t *testing.T, ev session.Event) session.AssistantChunk {
	t.Helper()
	var c session.AssistantChunk
	mustDecode(t, ev, &c)
	return c
}

// TestSessionFiguresFromFixtures checks the footer's totals on recorded
// sessions (tools and approvals; a retry and failed turns; compactions)
// against the reference: the whole log, each prefix ending at a turn/end,
// and the seqs between (the totals of the turns ended so far), through
// every way they are computed (the page fold, a FigureBook reading the
// log in small pages and one reading it at once). The tokens are the
// usage rows' sums.
func TestSessionFiguresFromFixtures(t *testing.T) {
	t.Parallel()
	md := render.NewMarkdown()
	for _, name := range []string{"demo-tools", "failures", "compaction", "subagent", "subagent-child"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			evs := loadFixture(t, name)
			want := refFigures(t, evs)
			if want.Turns == 0 || want.Requests == 0 || want.Streamed == 0 || want.ModelMs <= 0 {
				t.Fatalf("the fixture has no timed turns: %+v", want)
			}
			if name == "demo-tools" && want.ToolMs <= 0 {
				t.Fatalf("no tool time in %+v", want)
			}
			if got := render.FoldFigures(evs); got != want {
				t.Errorf("FoldFigures\n got %+v\nwant %+v", got, want)
			}
			tr := md.Fold(evs, render.FoldOptions{})
			if tr.Figures != want {
				t.Errorf("the page fold's figures\n got %+v\nwant %+v", tr.Figures, want)
			}
			// Tokens and TTFT as the turns' usage rows show them.
			var rows llm.Usage
			for _, it := range tr.Items {
				if u, ok := it.(*render.UsageItem); ok {
					rows = rows.Add(u.Usage)
					if u.Figures.Usage != u.Usage || u.Figures.Turns != 1 {
						t.Errorf("turn %d's row %+v: its figures %+v do not carry its usage", u.Turn, u.Usage, u.Figures)
					}
				}
			}
			if rows != want.Usage {
				t.Errorf("usage %+v, the rows sum %+v", want.Usage, rows)
			}

			// A book that reads at most 7 events a call, asked at every
			// seq in order (as the live projection and page loads do), and
			// a fresh one asked for the end at once.
			paged := render.NewFigureBook(0)
			log := fixtureLog(t, evs)
			calls := 0
			small := func(ctx context.Context, from, to int64) ([]session.Event, error) {
				calls++
				return log.Events(from, min(to, from+7)), nil
			}
			for i := range evs {
				got, err := paged.At(t.Context(), "s", int64(i), small)
				if err != nil {
					t.Fatal(err)
				}
				if w := refFigures(t, evs[:i+1]); got != w {
					t.Fatalf("at seq %d (%s)\n got %+v\nwant %+v", i, evs[i].Type, got, w)
				}
			}
			if calls < len(evs)/7 {
				t.Errorf("%d reads for %d events", calls, len(evs))
			}
			// Asking again for an earlier seq reads nothing.
			calls = 0
			if got, _ := paged.At(t.Context(), "s", int64(len(evs)/2), small); got != refFigures(t, evs[:len(evs)/2+1]) || calls != 0 {
				t.Errorf("an earlier seq: %+v after %d reads", got, calls)
			}
			whole, err := render.NewFigureBook(0).At(t.Context(), "s", int64(len(evs)-1), render.LogReader(log))
			if err != nil || whole != want {
				t.Errorf("book at the end: %+v, %v; want %+v", whole, err, want)
			}
		})
	}
}

// TestSessionFiguresDefinitions pins the definitions on a timed run: a
// failed attempt counts as model time (and its TTFT), a request cut off by
// its turn's end and a tool call without a result end with the turn, a
// request without usage adds no tokens/s, the average TTFT is rounded, a
// turn that has not ended counts nothing.
func TestSessionFiguresDefinitions(t *testing.T) {
	t.Parallel()
	r := &timedRun{run: run{t: t}}
	u1 := &llm.Usage{InputTokens: 100, CacheReadTokens: 300, OutputTokens: 50}
	u2 := &llm.Usage{InputTokens: 200, CacheWriteTokens: 100, OutputTokens: 30}
	done := session.TurnEndReason{Kind: session.ReasonCompleted}
	// Turn 1: a failed attempt that streamed (TTFT 100, 300 ms), a retry
	// that streams (TTFT 51) and answers with usage, a tool, a second
	// step cut off by a stop with a tool still running.
	r.at(1_000, session.TypeTurnStart, session.TurnStart{Turn: 1})
	r.at(1_000, session.TypeStepStart, session.StepBoundary{Turn: 1, Step: 1})
	r.chunkAt(1_100, 1, 1, llm.Chunk{Type: llm.ChunkReasoningDelta, Index: 0, Text: "h"})
	r.at(1_300, session.TypeLLMRetry, session.LLMRetry{RetryID: "r1", Turn: 1, Step: 1, Retry: 1, DelayMs: 500, Failure: llm.Failure{Code: llm.CodeServer}})
	r.at(1_800, session.TypeLLMRetryStarted, session.LLMRetryStarted{RetryID: "r1", Turn: 1, Step: 1, Retry: 1})
	r.chunkAt(1_851, 1, 1, llm.Chunk{Type: llm.ChunkToolCallDelta, Index: 0, ArgumentsDelta: "{"})
	r.at(2_351, session.TypeAssistantMessage, answerMsg(1, 1, "a1", u1, nil))
	r.at(2_400, session.TypeToolCall, session.ToolCall{Turn: 1, Step: 1, CallID: "c1", Name: "bash"})
	r.at(2_650, session.TypeToolResult, session.ToolResult{Turn: 1, Step: 1, Message: llm.ToolResultMessage("m-c1", "c1", []llm.ContentBlock{llm.Text("ok")}, false)})
	r.at(2_700, session.TypeStepStart, session.StepBoundary{Turn: 1, Step: 2})
	r.chunkAt(2_702, 1, 2, llm.Chunk{Type: llm.ChunkTextDelta, Index: 0, Text: "x"})
	r.at(2_900, session.TypeToolCall, session.ToolCall{Turn: 1, Step: 2, CallID: "c2", Name: "bash"})
	r.at(3_000, session.TypeTurnEnd, session.TurnEnd{Turn: 1, Reason: session.TurnEndReason{Kind: session.ReasonAborted}})
	// Turn 2: one request answered without a delta (no TTFT, no rate).
	r.at(10_000, session.TypeTurnStart, session.TurnStart{Turn: 2})
	r.at(10_010, session.TypeStepStart, session.StepBoundary{Turn: 2, Step: 1})
	r.at(10_410, session.TypeAssistantMessage, answerMsg(2, 1, "a2", u2, nil))
	r.at(10_500, session.TypeTurnEnd, session.TurnEnd{Turn: 2, Reason: done})
	// Turn 3 is running: it counts once it ends.
	r.at(20_000, session.TypeTurnStart, session.TurnStart{Turn: 3})
	r.at(20_000, session.TypeStepStart, session.StepBoundary{Turn: 3, Step: 1})
	r.chunkAt(20_005, 3, 1, llm.Chunk{Type: llm.ChunkTextDelta, Index: 0, Text: "y"})

	want := render.SessionFigures{
		Turns: 2, Steps: 3, Requests: 4,
		// 300 (failed) + 551 (retry) + 300 (cut at the stop) + 400.
		ModelMs: 300 + 551 + 300 + 400,
		// c1 250, c2 until the stop 100.
		ToolMs:   250 + 100,
		Streamed: 3, TTFTSumMs: 100 + 51 + 2,
		StreamMs: 500, StreamOutput: 50,
		Usage: u1.Add(*u2),
	}
	got := render.FoldFigures(r.evs)
	if got != want {
		t.Fatalf("figures\n got %+v\nwant %+v", got, want)
	}
	if ref := refFigures(t, r.evs); ref != want {
		t.Fatalf("the test's reference disagrees with itself: %+v", ref)
	}
	ttft, ok := got.AvgTTFTMs()
	rate, okRate := got.TokensPerSecond()
	hit, okHit := got.CacheHitRatio()
	if !ok || ttft != 51 || !okRate || rate != 100 || !okHit || hit != 300.0/700 || got.TokensIn() != 700 || got.TokensOut() != 80 {
		t.Errorf("derived: ttft %d %v, rate %v %v, hit %v %v, in %d, out %d", ttft, ok, rate, okRate, hit, okHit, got.TokensIn(), got.TokensOut())
	}
	html := renderFooter(t, got)
	for _, s := range []string{
		`data-fig="turns" data-value="2"`, `data-fig="steps" data-value="3"`, `data-fig="model-time" data-value="1551"`,
		`data-fig="tool-time" data-value="350"`, `data-fig="ttft" data-value="51"`, `data-fig="tokens-per-sec" data-value="100"`,
		`data-fig="cache-hit" data-value="0.42857142857142855"`, `data-fig="tokens-in" data-value="700"`, `data-fig="tokens-out" data-value="80"`,
		"<dd>1.6 s</dd>", "<dd>51 ms</dd>", "<dd>100</dd>", "<dd>43%</dd>",
	} {
		if !strings.Contains(html, s) {
			t.Errorf("footer lacks %s:\n%s", s, html)
		}
	}
	// Nothing streamed yet: the derived figures are absent, not 0.
	empty := renderFooter(t, render.SessionFigures{})
	for _, k := range []string{"ttft", "tokens-per-sec", "cache-hit"} {
		if !strings.Contains(empty, `data-fig="`+k+`" data-value=""`) {
			t.Errorf("empty footer: %s is not blank:\n%s", k, empty)
		}
	}
}

func renderFooter(t *testing.T, f render.SessionFigures) string {
	t.Helper()
	var sb strings.Builder
	if err := render.SessionFooter(f).Render(context.Background(), &sb); err != nil {
		t.Fatal(err)
	}
	return sb.String()
}

// TestLiveFooter follows the fixtures live with a projection whose
// figures come from a FigureBook over the same log (as app wires it):
// the footer is upserted into the page's bottom area at each turn/end
// and with no other event, with the figures as of that turn/end, the same
// markup the page renders; the golden file holds each fixture's footer.
func TestLiveFooter(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	for _, name := range []string{"demo-tools", "failures", "compaction", "subagent", "subagent-child"} {
		evs := loadFixture(t, name)
		l := fixtureLog(t, evs)
		book := render.NewFigureBook(0)
		p := newLive(l, 0, render.ProjectionOptions{Figures: func(seq int64) (render.SessionFigures, bool) {
			f, err := book.At(context.Background(), name, seq, render.LogReader(l))
			return f, err == nil
		}})
		ends := 0
		for i, ev := range evs {
			frag := live(t, p, ev, class{canAnswer: true})
			has := strings.Contains(frag, `<template data-op="upsert" data-parent="`+render.ParentFooter+`"><dl class="session-figures" id="session-figures"`)
			if has != (ev.Type == session.TypeTurnEnd) {
				t.Fatalf("%s #%d %s: footer upserted %v", name, ev.Seq, ev.Type, has)
			}
			if !has {
				continue
			}
			ends++
			page := renderFooter(t, refFigures(t, evs[:i+1]))
			if !strings.Contains(frag, page) {
				t.Errorf("%s #%d: the live footer is not the page's\npage %s\nfrag %s", name, ev.Seq, page, frag)
			}
		}
		if ends == 0 {
			t.Fatalf("%s: no turn ended", name)
		}
		fmt.Fprintf(&out, "<!-- %s -->\n%s\n", name, renderFooter(t, refFigures(t, evs)))
	}
	golden(t, "footer.html", out.String())
}
