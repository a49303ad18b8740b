package compact_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"harness/internal/compact"
	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/session"
	"harness/internal/testkit"
)

const goal = "GOAL: build the frobnicator with a --dry-run flag"

// summaryText is what the fake summarizer answers: a checkpoint that keeps
// the user's goal verbatim.
const summaryText = "## Primary Request and Intent\n- " + goal + "\n\n## Pending Jobs\n- add --dry-run\n\n## Next Step\n- run the tests"

// Case 62: below the threshold nothing happens, even with an oversized tool
// result on the surface (the pruner is never opportunistic); above it the
// pruner alone relieves the pressure: compaction/prune and the replacing
// tool/result, no summary.
func TestCase62PruneRelievesPressure(t *testing.T) {
	t.Parallel()
	h := newHarness(t, config{window: 8000}) // threshold 6400
	h.script(emitCall("c1", 23000), text("ok"))
	h.run("emit a lot")
	if m := h.measure(); m.TotalTokens >= 6400 || m.TotalTokens < 6000 {
		t.Fatalf("turn 1 ends at %d tokens, want just below the threshold\n%s", m.TotalTokens, h.dump())
	}
	for _, ev := range h.events() {
		if strings.HasPrefix(string(ev.Type), "compaction/") {
			t.Fatalf("compaction below the threshold:\n%s", h.dump())
		}
	}

	h.script(emitCall("c2", 2000), text("done"))
	h.run("emit a little more")
	turn2 := eventsOfTurn(h, 2)
	equal(t, "turn 2 events", testkit.Types(turn2), []string{
		"turn/start", "agent/inbox/spliced", "step/start", "user/message",
		"assistant/chunk*", "assistant/message", "tool/call", "tool/result", "step/end",
		"compaction/prune", "tool/result",
		"step/start", "assistant/chunk*", "assistant/message", "step/end", "turn/end",
	})
	results := testkit.Find[session.ToolResult](t, h.events(), session.TypeToolResult)
	c1 := results[0].Message.Content[0].Content[0].Text
	pruned := results[2].Message.Content[0].Content[0].Text
	if results[2].Message.ID != results[0].Message.ID || !strings.HasPrefix(pruned, c1[:4096]) ||
		!strings.HasSuffix(pruned, c1[len(c1)-1024:]) || !strings.Contains(pruned, compact.PruneMarker) {
		t.Fatalf("pruned result %q…", pruned[:100])
	}
	if m := h.measure(); m.TotalTokens >= 6400 {
		t.Fatalf("still %d tokens after pruning", m.TotalTokens)
	}
	// The step after the prune sent the pruned result.
	turns, summaries := h.requests()
	if len(summaries) != 0 {
		t.Fatalf("%d summary calls, want none", len(summaries))
	}
	last := turns[len(turns)-1].Messages()
	var sent string
	for _, m := range last {
		if m.Role == "tool" && m.ToolCallID == "c1" {
			sent = m.Text()
		}
	}
	if sent != pruned {
		t.Fatalf("request carried %d chars of c1, want the pruned %d", len(sent), len(pruned))
	}
}

// eventsOfTurn returns the events from turn/start{n} to turn/end{n}.
func eventsOfTurn(h *harness, n int) []session.Event {
	events := h.events()
	var start, end int
	for i, ev := range events {
		switch ev.Type {
		case session.TypeTurnStart:
			if ts, _ := session.Decode[session.TurnStart](ev); ts.Turn == n {
				start = i
			}
		case session.TypeTurnEnd:
			if te, _ := session.Decode[session.TurnEnd](ev); te.Turn == n {
				end = i
			}
		}
	}
	return events[start : end+1]
}

// pressureSession runs two turns that leave a 2,000-token window above its
// 1,600 threshold: a long answer, then a tool round trip whose result lies
// across the 320-token retain boundary.
func pressureSession(t *testing.T, h *harness) {
	t.Helper()
	h.script(text(strings.Repeat("The frobnicator design. ", 125))) // 3000 chars
	h.run(goal)
	h.script(emitCall("c1", 1600), text(strings.Repeat("Result read. ", 46)))
	h.run("now run emit")
	if m := h.measure(); m.TotalTokens < 1600 {
		t.Fatalf("setup ends at %d tokens, want above the threshold\n%s", m.TotalTokens, h.dump())
	}
}

// Case 63: pressure compaction lands compaction/start{turn},
// compaction/summary, the replacing checkpoint user/message and
// compaction/end between the claim and step/start; the cut keeps the tool
// call with its result; the next request carries the system prompt, the
// checkpoint (with the user's goal) and the retained tail.
func TestCase63PressureCompaction(t *testing.T) {
	t.Parallel()
	h := newHarness(t, config{window: 2000})
	pressureSession(t, h)
	before := h.log().Surface()
	tailSeqs := before[len(before)-3:] // call, result, answer
	h.summarizer(text(summaryText))
	h.script(text("continuing"))
	h.run("go on")

	turn3 := eventsOfTurn(h, 3)
	equal(t, "turn 3 events", testkit.Types(turn3), []string{
		"turn/start", "agent/inbox/spliced",
		"compaction/start", "compaction/summary", "user/message", "compaction/end",
		"step/start", "user/message", "user/message",
		"assistant/chunk*", "assistant/message", "step/end", "turn/end",
	})
	start, _ := only[session.CompactionStart](t, turn3, session.TypeCompactionStart)
	sum, sumEv := only[session.CompactionSummary](t, turn3, session.TypeCompactionSum)
	end, _ := only[session.CompactionEnd](t, turn3, session.TypeCompactionEnd)
	if start.Turn == nil || *start.Turn != 3 || end.Turn == nil || *end.Turn != 3 || end.Error != "" ||
		start.CompactionID != sum.CompactionID || end.CompactionID != sum.CompactionID {
		t.Fatalf("bracket start %+v end %+v", start, end)
	}
	// Everything before the tool call was compacted; the pair stays.
	wantShadowed := before[:len(before)-3]
	if !slices.Equal(sum.ShadowedSeqs, wantShadowed) || sum.ShadowedRange.Start != wantShadowed[0] ||
		sum.ShadowedRange.End != wantShadowed[len(wantShadowed)-1] || sum.Provider != provider || sum.Model != model {
		t.Fatalf("summary %+v, want shadowed %v", sum, wantShadowed)
	}
	cpEv := turn3[slices.IndexFunc(turn3, func(ev session.Event) bool { return ev.Seq == sumEv.Seq })+1]
	cp, _ := session.Decode[llm.Message](cpEv)
	wantSources := append([]int64{turn3[2].Seq, sumEv.Seq}, wantShadowed...)
	if cpEv.Type != session.TypeUserMessage || cpEv.SurfaceOp.Op != session.OpReplace ||
		cpEv.SurfaceOp.Start != wantShadowed[0] || cpEv.SurfaceOp.End != wantShadowed[len(wantShadowed)-1] ||
		!slices.Equal(cpEv.SourceEventSeqs, wantSources) {
		t.Fatalf("checkpoint envelope %+v %v, want sources %v", cpEv.SurfaceOp, cpEv.SourceEventSeqs, wantSources)
	}
	if cp.Source.Kind != llm.SourcePlugin || cp.Source.Plugin != llm.PluginCompact || cp.Source.CompactionID != sum.CompactionID {
		t.Fatalf("checkpoint source %+v", cp.Source)
	}
	if n := len(cp.Content); n != 3 || !strings.HasSuffix(cp.Content[0].Text, compact.SummaryOpenTag) ||
		cp.Content[1].Text != summaryText || cp.Content[2].Text != compact.SummaryCloseTag {
		t.Fatalf("checkpoint content %+v", cp.Content)
	}
	surface := h.log().Surface()
	if surface[0] != cpEv.Seq || !slices.Equal(surface[1:4], tailSeqs) {
		t.Fatalf("surface %v, want checkpoint then the retained tail %v", surface, tailSeqs)
	}

	turns, summaries := h.requests()
	if len(summaries) != 1 {
		t.Fatalf("%d summary calls", len(summaries))
	}
	// The summary call replays the conversation's system prompt and tools,
	// then the shadowed messages, then the instruction asking for the goal.
	sreq := summaries[0].Messages()
	creq := turns[len(turns)-2].Messages() // the last request before compaction
	if sreq[0].Role != "system" || sreq[0].Text() != creq[0].Text() || !sameTools(summaries[0], turns[len(turns)-2]) {
		t.Fatal("summary call does not replay the system prompt and tools")
	}
	if sreq[1].Text() != goal || len(sreq) != 1+len(wantShadowed)+1 {
		t.Fatalf("summary call messages %d, first %q", len(sreq), sreq[1].Text())
	}
	instr := sreq[len(sreq)-1].Text()
	if instr != compact.SummaryInstruction() || !strings.Contains(instr, "Primary Request and Intent") ||
		!strings.Contains(instr, "user's original goal") || !strings.Contains(instr, "Pending Jobs") {
		t.Fatalf("instruction %q", instr)
	}
	if summaries[0].Body["max_tokens"] != float64(compact.DefaultMaxSummaryTokens) {
		t.Fatalf("summary max_tokens %v", summaries[0].Body["max_tokens"])
	}

	// The request after compaction: system prompt, checkpoint with the goal,
	// the retained tool pair and answer, then the new prompt.
	next := turns[len(turns)-1].Messages()
	var roles []string
	for _, m := range next {
		roles = append(roles, m.Role)
	}
	equal(t, "next request roles", roles, []string{"system", "user", "assistant", "tool", "assistant", "user", "user"})
	if next[0].Text() != creq[0].Text() || !strings.Contains(next[1].Text(), goal) ||
		!strings.Contains(next[1].Text(), compact.SummaryOpenTag) || next[2].ToolCalls[0].ID != "c1" ||
		next[3].ToolCallID != "c1" || next[5].Text() != "go on" {
		t.Fatalf("next request %+v", next)
	}
	if m := h.measure(); m.TotalTokens >= 1600 {
		t.Fatalf("still %d tokens after compaction", m.TotalTokens)
	}
}

// sameTools reports whether two requests sent the same, non-empty tools.
func sameTools(a, b fake.Recorded) bool {
	return a.Body["tools"] != nil && reflect.DeepEqual(a.Body["tools"], b.Body["tools"])
}

// Cancelling the turn while the summary is being written closes the bracket
// with exactly one compaction/end{error} and aborts the turn before its
// step.
func TestPressureCancelledDuringSummary(t *testing.T) {
	t.Parallel()
	h := newHarness(t, config{window: 2000})
	pressureSession(t, h)
	surface := h.log().Surface()
	h.mu.Lock()
	h.onSummary = func() {
		h.agent.Cancel(session.CancelCause{Kind: session.CauseUser}, false)
	}
	h.mu.Unlock()
	// The summary stalls until the client goes away.
	h.summarizer(fake.Reply{Text: "never", Fault: &fake.Fault{Kind: fake.FaultStall}})
	h.run("go on")

	equal(t, "turn 3", testkit.Types(eventsOfTurn(h, 3)), []string{
		"turn/start", "agent/inbox/spliced", "compaction/start", "compaction/end", "turn/end",
	})
	end, _ := only[session.CompactionEnd](t, h.events(), session.TypeCompactionEnd)
	if end.Error == "" || end.Turn == nil || *end.Turn != 3 {
		t.Fatalf("end %+v", end)
	}
	if r := h.lastTurnEnd(); r.Kind != session.ReasonAborted {
		t.Fatalf("turn ended %+v", r)
	}
	if !slices.Equal(h.log().Surface(), surface) {
		t.Fatal("the surface changed")
	}
	if h.logs.contains("compaction did not relieve") {
		t.Fatal("a cancelled compaction was reported as a failure")
	}
}

// When one summary leaves the session above the threshold, a pressure
// check writes another (CompactionRetries, default 1), which merges the
// first checkpoint; with retries disabled it stops after one and warns.
func TestPressureSecondSummary(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		retries  int
		brackets int
	}{
		{"default retries", 0, 2},
		{"no retries", -1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, config{window: 2000, opts: compact.Options{CompactionRetries: tt.retries}})
			pressureSession(t, h)
			m := h.measure()
			rng, ok := compact.SelectRange(m, 320)
			if !ok {
				t.Fatal("nothing to compact")
			}
			// A first checkpoint just smaller than the span, so the session
			// stays above the 1,600 threshold.
			target := rng.Tokens - 4
			if m.TotalTokens-rng.Tokens+target < 1600 {
				t.Fatalf("setup: %d tokens, span %d", m.TotalTokens, rng.Tokens)
			}
			overhead := compact.EstimateBlocks(compact.CheckpointContent(nil)) + 4 // + role
			first := strings.Repeat("x", int(target-overhead-4)*4)                 // a text block costs len/4 + 4
			h.summarizer(text(first), text(summaryText))
			h.script(text("continuing"))
			h.run("go on")

			ends := testkit.Find[session.CompactionEnd](t, h.events(), session.TypeCompactionEnd)
			if len(ends) != tt.brackets {
				t.Fatalf("%d compactions, want %d\n%s", len(ends), tt.brackets, h.dump())
			}
			for _, e := range ends {
				if e.Error != "" {
					t.Fatalf("compaction failed: %s", e.Error)
				}
			}
			_, summaries := h.requests()
			if tt.brackets == 2 {
				// The second call summarizes the first checkpoint.
				msgs := summaries[1].Messages()
				if len(msgs) != 3 || !strings.Contains(msgs[1].Text(), compact.SummaryOpenTag+first) {
					t.Fatalf("second summary call %d messages", len(msgs))
				}
				if got := h.measure().TotalTokens; got >= 1600 {
					t.Fatalf("still %d tokens", got)
				}
				return
			}
			if !h.logs.contains("after compacting 1 time(s)") {
				t.Fatal("no warning that pressure remains")
			}
		})
	}
}
