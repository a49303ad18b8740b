package compact_test

import (
	"strings"
	"testing"

	"harness/internal/llm"
	"harness/internal/session"
	"harness/internal/testkit"
)

// Case 64: CONTEXT_WINDOW_EXCEEDED with compactable history: the summary
// lands inside the failed step and the request is retried once, in the
// same turn and step, and succeeds.
func TestCase64OverflowRetriesOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, config{window: 100_000}) // pressure never qualifies
	h.script(text(strings.Repeat("A long design answer. ", 100)))
	h.run(goal)
	h.script(overflow(), text("fits now"))
	h.summarizer(text(summaryText))
	h.run("continue")

	equal(t, "turn 2 events", testkit.Types(eventsOfTurn(h, 2)), []string{
		"turn/start", "agent/inbox/spliced", "step/start", "user/message",
		"assistant/chunk*", // the failed attempt's finish{error}
		"compaction/start", "compaction/summary", "user/message", "compaction/end",
		"assistant/chunk*", "assistant/message", "step/end", "turn/end",
	})
	if r := h.lastTurnEnd(); r.Kind != session.ReasonCompleted {
		t.Fatalf("turn 2 ended %+v", r)
	}
	start, _ := only[session.CompactionStart](t, h.events(), session.TypeCompactionStart)
	if start.Turn == nil || *start.Turn != 2 {
		t.Fatalf("bracket owner %v, want turn 2", start.Turn)
	}
	// Retain 0: everything but the newest unit (the new prompt).
	surface := h.log().Surface()
	derived := h.log().DeriveMessages()
	if len(surface) != 3 || derived[0].Source.Plugin != llm.PluginCompact || derived[1].Text() != "continue" {
		t.Fatalf("surface %v: %+v", surface, derived)
	}
	turns, summaries := h.requests()
	if len(turns) != 3 || len(summaries) != 1 {
		t.Fatalf("%d turn requests, %d summaries; want 3 and 1", len(turns), len(summaries))
	}
	retry := turns[2].Messages()
	if len(retry) != 3 || retry[0].Role != "system" || !strings.Contains(retry[1].Text(), goal) || retry[2].Text() != "continue" {
		t.Fatalf("retried request %+v", retry)
	}
	for _, ev := range h.events() {
		if ev.Type == session.TypeLLMRetry {
			t.Fatal("overflow went through the retry policy")
		}
	}
}

// A second overflow in the same step exhausts MaxOverflowRetries: the
// original error ends the turn, after exactly one compaction.
func TestOverflowRetryBudget(t *testing.T) {
	t.Parallel()
	h := newHarness(t, config{window: 100_000})
	h.script(text(strings.Repeat("A long design answer. ", 100)))
	h.run(goal)
	h.script(overflow(), overflow())
	h.summarizer(text(summaryText))
	h.run("continue")

	r := h.lastTurnEnd()
	if r.Kind != session.ReasonError || r.Error == nil || r.Error.Code != llm.CodeContextWindowExceeded {
		t.Fatalf("turn ended %+v, want the overflow error", r)
	}
	if n := len(testkit.Find[session.CompactionStart](t, h.events(), session.TypeCompactionStart)); n != 1 {
		t.Fatalf("%d compactions, want 1", n)
	}
	// A new turn has a fresh budget.
	h.script(overflow(), text("ok"))
	h.summarizer(text("## Primary Request and Intent\n- " + goal))
	h.run("again")
	if r := h.lastTurnEnd(); r.Kind != session.ReasonCompleted {
		t.Fatalf("turn 3 ended %+v\n%s", r, h.dump())
	}
}

// Case 64, indivisible: the whole history is one unit (a single prompt, no
// runtime context), so nothing can be compacted: no compaction events, no
// retry, and the provider's error ends the turn.
func TestCase64IndivisibleKeepsError(t *testing.T) {
	t.Parallel()
	h := newHarness(t, config{window: 100_000, noCtx: true})
	h.script(overflow())
	h.run(goal + strings.Repeat(" and more", 500))

	equal(t, "events", testkit.Types(h.events()), []string{
		"agent/inbox/spliced", "turn/start", "agent/inbox/spliced", "step/start", "user/message",
		"session/title", "request/header", "request/context", "assistant/chunk*", "step/end", "turn/end",
	})
	r := h.lastTurnEnd()
	if r.Kind != session.ReasonError || r.Error.Code != llm.CodeContextWindowExceeded || !strings.Contains(r.Error.Message, "maximum context length") {
		t.Fatalf("turn ended %+v", r)
	}
	if turns, summaries := h.requests(); len(turns) != 1 || len(summaries) != 0 {
		t.Fatalf("%d requests, %d summaries", len(turns), len(summaries))
	}
	if !h.logs.contains("keeping the original error") {
		t.Fatal("no warning logged")
	}
}
