package compact_test

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"harness/internal/compact"
	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/session"
	"harness/internal/testkit"
)

// twoTurns leaves a history of u1, snapshot, a1, u2, a2.
func twoTurns(t *testing.T, h *harness) {
	t.Helper()
	h.script(text(strings.Repeat("A long design answer. ", 100)), text("Second answer."))
	h.run(goal)
	h.run("second")
}

// typesFrom lists the event types after seq.
func typesFrom(h *harness, seq int64) []string {
	return testkit.Types(h.log().Events(seq+1, h.log().Len()))
}

// lastOf returns the last event of type typ.
func lastOf(h *harness, typ session.Type) session.Event {
	events := h.events()
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type == typ {
			return events[i]
		}
	}
	h.t.Fatalf("no %s\n%s", typ, h.dump())
	return session.Event{}
}

// Case 66: /compact on an idle agent writes a standalone bracket (turn
// null) and consumes no turn number; a prompt sent during it waits, and the
// session is durable before that prompt runs.
func TestCase66ManualCompact(t *testing.T) {
	t.Parallel()
	h := newHarness(t, config{window: 100_000})
	twoTurns(t, h)
	end2 := lastOf(h, session.TypeTurnEnd).Seq
	before := h.log().Surface()

	var (
		mu      sync.Mutex
		sendErr error
	)
	h.mu.Lock()
	h.onSummary = func() {
		mu.Lock()
		defer mu.Unlock()
		sendErr = h.agent.Followup(h.ctx, userMsg("queued during compaction"))
	}
	h.mu.Unlock()
	h.summarizer(text(summaryText))
	h.script(text("after compaction"))
	opts := h.opts
	opts.CommandID = "cmd-1"
	res, err := compact.Compact(h.ctx, h.agent, opts)
	if err != nil {
		t.Fatalf("compact: %v\n%s", err, h.dump())
	}
	// Flushed before release: the store already holds the closed bracket,
	// without a flush from the test.
	stored, err := h.store.EventsSince(h.ctx, "s1", -1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(stored, func(ev session.Event) bool { return ev.Type == session.TypeCompactionEnd }) {
		t.Fatal("compaction/end not durable when Compact returned")
	}
	h.idle()
	mu.Lock()
	if sendErr != nil {
		t.Fatalf("followup during compaction: %v", sendErr)
	}
	mu.Unlock()

	if !res.Compacted || res.Replaced != 4 || res.TokensSaved <= 0 || res.ShadowedRange == nil ||
		res.ShadowedRange.Start != before[0] || res.ShadowedRange.End != before[3] {
		t.Fatalf("result %+v, surface before %v", res, before)
	}
	equal(t, "after turn 2", typesFrom(h, end2), []string{
		"compaction/start", "agent/inbox/spliced", "compaction/summary", "user/message", "compaction/end",
		"turn/start", "agent/inbox/spliced", "step/start", "user/message", "user/message",
		"assistant/chunk*", "assistant/message", "step/end", "turn/end",
	})
	start, _ := only[session.CompactionStart](t, h.events(), session.TypeCompactionStart)
	end, _ := only[session.CompactionEnd](t, h.events(), session.TypeCompactionEnd)
	if start.Turn != nil || end.Turn != nil || end.Error != "" || start.SourceCommandID != "cmd-1" || start.CompactionID != res.CompactionID {
		t.Fatalf("bracket %+v / %+v", start, end)
	}
	if ts := testkit.Find[session.TurnStart](t, h.events(), session.TypeTurnStart); ts[len(ts)-1].Turn != 3 {
		t.Fatalf("the queued prompt ran as turn %d, want 3", ts[len(ts)-1].Turn)
	}
	turns, summaries := h.requests()
	if len(summaries) != 1 {
		t.Fatalf("%d summary calls", len(summaries))
	}
	last := turns[len(turns)-1].Messages()
	if !strings.Contains(last[1].Text(), goal) || last[2].Text() != "Second answer." || last[3].Text() != "queued during compaction" {
		t.Fatalf("request after compaction %+v", last)
	}
}

// Manual compaction refuses a running agent and a live compaction lock; a
// lock left by a crash is released on restart: crash repair closes the
// bracket with compaction/end{interrupted}.
func TestCase66ManualBusy(t *testing.T) {
	t.Parallel()
	h := newHarness(t, config{window: 100_000})
	twoTurns(t, h)

	h.script(fake.Reply{Text: "slow answer", Chunks: 10, Delay: 20 * time.Millisecond, NoUsage: true})
	if err := h.agent.Followup(h.ctx, userMsg("third")); err != nil {
		t.Fatal(err)
	}
	if _, err := compact.Compact(h.ctx, h.agent, h.opts); !errors.Is(err, compact.ErrBusy) {
		t.Fatalf("compact while running: %v, want ErrBusy", err)
	}
	h.idle()

	// A live unmatched compaction/start holds the lock.
	if _, err := h.log().Append(session.TypeCompactionStart, session.CompactionStart{CompactionID: "crashed"}); err != nil {
		t.Fatal(err)
	}
	n := h.log().Len()
	if _, err := compact.Compact(h.ctx, h.agent, h.opts); !errors.Is(err, compact.ErrBusy) {
		t.Fatalf("compact under a live lock: %v, want ErrBusy", err)
	}
	if h.log().Len() != n {
		t.Fatalf("a refused compaction logged %v", typesFrom(h, n-1))
	}

	// After a restart the bracket is closed, right after the dead start.
	h.restart()
	if end := lastOf(h, session.TypeCompactionEnd); end.Seq != n {
		t.Fatalf("compaction/end at %d, want %d right after the dead start\n%s", end.Seq, n, h.dump())
	}
	if end, _ := only[session.CompactionEnd](t, h.events(), session.TypeCompactionEnd); end.CompactionID != "crashed" || end.Error != session.CompactionInterrupted {
		t.Fatalf("end %+v", end)
	}
	h.summarizer(text(summaryText))
	res, err := compact.Compact(h.ctx, h.agent, h.opts)
	if err != nil || !res.Compacted {
		t.Fatalf("compact after restart: %+v %v\n%s", res, err, h.dump())
	}
	h.check()
}

// Compacting a session with no history logs nothing.
func TestManualNothingToCompact(t *testing.T) {
	t.Parallel()
	h := newHarness(t, config{window: 100_000})
	res, err := compact.Compact(h.ctx, h.agent, h.opts)
	if err != nil || res.Compacted || h.log().Len() != 0 {
		t.Fatalf("result %+v err %v, %d events", res, err, h.log().Len())
	}
}

// Case 65: a summary that is not smaller than what it would replace ends
// the bracket with an error and leaves the surface as it was, for a manual
// compaction and for pressure (where the turn goes on).
func TestCase65SummaryNotSmaller(t *testing.T) {
	t.Parallel()
	huge := text(strings.Repeat("An overlong summary. ", 400))

	t.Run("manual", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, config{window: 100_000})
		twoTurns(t, h)
		end2 := lastOf(h, session.TypeTurnEnd).Seq
		surface, gen := h.log().Surface(), h.log().ReplaceGeneration()
		h.summarizer(huge)
		_, err := compact.Compact(h.ctx, h.agent, h.opts)
		if err == nil || !strings.Contains(err.Error(), "not smaller") || errors.Is(err, compact.ErrBusy) {
			t.Fatalf("compact: %v", err)
		}
		equal(t, "events", typesFrom(h, end2), []string{"compaction/start", "compaction/end"})
		end, _ := only[session.CompactionEnd](t, h.events(), session.TypeCompactionEnd)
		if end.Turn != nil || !strings.Contains(end.Error, "not smaller") {
			t.Fatalf("end %+v", end)
		}
		if !slices.Equal(h.log().Surface(), surface) || h.log().ReplaceGeneration() != gen {
			t.Fatal("the surface changed")
		}
		h.check()
	})

	t.Run("pressure", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, config{window: 2000})
		pressureSession(t, h)
		surface := h.log().Surface()
		h.summarizer(huge)
		h.script(text("continuing anyway"))
		h.run("go on")
		equal(t, "turn 3", testkit.Types(eventsOfTurn(h, 3)), []string{
			"turn/start", "agent/inbox/spliced", "compaction/start", "compaction/end",
			"step/start", "user/message", "assistant/chunk*", "assistant/message", "step/end", "turn/end",
		})
		end, _ := only[session.CompactionEnd](t, h.events(), session.TypeCompactionEnd)
		if end.Turn == nil || *end.Turn != 3 || !strings.Contains(end.Error, "not smaller") {
			t.Fatalf("end %+v", end)
		}
		if got := h.log().Surface(); !slices.Equal(got[:len(surface)], surface) {
			t.Fatalf("surface %v, was %v", got, surface)
		}
		if r := h.lastTurnEnd(); r.Kind != session.ReasonCompleted {
			t.Fatalf("turn ended %+v", r)
		}
		if !h.logs.contains("compaction did not relieve context pressure") {
			t.Fatal("no warning logged")
		}
	})
}

// A failing summary call (the provider errors) also closes the bracket
// with exactly one compaction/end{error}.
func TestSummaryCallFails(t *testing.T) {
	t.Parallel()
	h := newHarness(t, config{window: 100_000})
	twoTurns(t, h)
	end2 := lastOf(h, session.TypeTurnEnd).Seq
	h.summarizer(fake.Reply{Error: &fake.HTTPError{Status: 401, Message: "bad key"}})
	if _, err := compact.Compact(h.ctx, h.agent, h.opts); err == nil || !strings.Contains(err.Error(), string(llm.CodeAuth)) {
		t.Fatalf("compact: %v", err)
	}
	equal(t, "events", typesFrom(h, end2), []string{"compaction/start", "compaction/end"})
	if end, _ := only[session.CompactionEnd](t, h.events(), session.TypeCompactionEnd); !strings.Contains(end.Error, "bad key") {
		t.Fatalf("end %+v", end)
	}
	// The lock is released: the next attempt works.
	h.summarizer(text(summaryText))
	if res, err := compact.Compact(h.ctx, h.agent, h.opts); err != nil || !res.Compacted {
		t.Fatalf("second attempt %+v %v", res, err)
	}
	h.check()
}

func TestOnLoad(t *testing.T) {
	t.Parallel()
	start := func(id string) session.CompactionStart { return session.CompactionStart{CompactionID: id} }
	tests := []struct {
		name    string
		events  func(b *logBuilder)
		endSeed bool
	}{
		{"no bracket", func(b *logBuilder) { b.user("hi") }, false},
		{"closed bracket", func(b *logBuilder) {
			b.add(session.TypeCompactionStart, start("a"))
			b.add(session.TypeCompactionEnd, session.CompactionEnd{CompactionID: "a"})
		}, false},
		{"open bracket", func(b *logBuilder) {
			b.add(session.TypeCompactionStart, start("a"))
			b.add(session.TypeCompactionEnd, session.CompactionEnd{CompactionID: "a"})
			b.add(session.TypeCompactionStart, start("b"))
			b.user("hi")
		}, true},
		{"already dead", func(b *logBuilder) {
			b.add(session.TypeCompactionStart, start("a"))
			b.add(session.TypeEndSeed, session.EndSeed{})
			b.user("hi")
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := newLog(t)
			tt.events(b)
			n := b.l.Len()
			if err := compact.OnLoad(b.l); err != nil {
				t.Fatal(err)
			}
			grew := b.l.Len() == n+1
			if grew != tt.endSeed || (grew && b.l.LastEndSeed() != n) || (!grew && b.l.Len() != n) {
				t.Fatalf("log %d -> %d events, last end-seed %d", n, b.l.Len(), b.l.LastEndSeed())
			}
			// Idempotent: a second load adds nothing.
			after := b.l.Len()
			if err := compact.OnLoad(b.l); err != nil || b.l.Len() != after {
				t.Fatalf("second OnLoad grew the log from %d to %d", after, b.l.Len())
			}
		})
	}
}
