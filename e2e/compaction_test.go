package e2e_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/testkit"
)

// compactionWindow is the scripted route's context window: the system
// prompt and tool schemas take about 2.3k tokens, so four long answers
// pass the 80% pressure threshold and the fifth turn compacts.
const compactionWindow = 6_000

// compactionGoal is the user's goal; the summaries must keep it.
const compactionGoal = "a tiny calculator in Go"

// compactionProvider is a scripted route with a small context window:
// answers of about 650 tokens ("slow" ones stream for a couple of
// seconds), session titles, and an eight-section checkpoint for the
// summary requests (X-Harness-Purpose: compaction).
func compactionProvider(t *testing.T) llm.Provider {
	t.Helper()
	_, p := testkit.FakeRoute(t, fake.Script{Responder: func(rec fake.Recorded) fake.Reply {
		switch rec.Header.Get("X-Harness-Purpose") {
		case "session-title":
			return fake.Reply{Text: "Calculator in Go"}
		case string(llm.PurposeCompaction):
			return fake.Reply{Text: "## Primary Request and Intent\n- Build " + compactionGoal + ", step by step.\n\n" +
				"## Key Technical Concepts\n- Recursive descent parsing, `float64` arithmetic.\n\n" +
				"## Files and Code\n- `calc.go`: the parser and the evaluator.\n\n## Errors and Fixes\n- (none)\n\n" +
				"## Pending Jobs\n- Tests and a README.\n\n## Current Work\n- Error handling.\n\n" +
				"## Next Step\n- Write the tests.\n\n## Critical Context\n- Keep everything in one file.", Chunks: 6}
		}
		r := fake.Reply{Text: "Here is the next part of the calculator.\n\n" +
			strings.Repeat("The parser reads numbers and operators and builds the expression tree. ", 36) +
			"\n\n```go\nfunc eval(expr string) (float64, error) {\n\treturn parse(expr).value()\n}\n```", Chunks: 12}
		if strings.Contains(lastUserText(rec), "slowly") {
			r.Chunks, r.Delay = 40, 75*time.Millisecond
		}
		return r
	}}, testkit.RouteOptions{
		Name: "scripted", Label: "Scripted", Model: "small-window", ModelLabel: "Small window", Window: compactionWindow,
		APIKey: "sk-test-e2e-key-0123456789",
	})
	return p
}

// lastUserText is the text of the request's last user message.
func lastUserText(rec fake.Recorded) string {
	msgs := rec.Messages()
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" && !strings.HasPrefix(msgs[i].Text(), "Current runtime context") {
			return msgs[i].Text()
		}
	}
	return ""
}

// meter reads the header's context meter: the percent and its text.
func (b *browser) meter() (float64, string) {
	b.t.Helper()
	pct := eval[float64](b, `Number(document.getElementById("ctx-meter").dataset.percent)`)
	return pct, b.text("#ctx-meter")
}

// scrollToBottom shows the newest items (the transcript follows the
// bottom only while the reader is there).
func (b *browser) scrollToBottom() {
	b.t.Helper()
	eval[bool](b, `(() => { const s = document.getElementById("scroller"); s.scrollTop = s.scrollHeight; return true; })()`)
}

// TestCompactionMeterAndMarker: on a small window the meter rises turn by
// turn; when pressure compacts the history a marker appears that expands
// to the summary, and the meter drops. /compact in the composer compacts
// an idle session (busy while a turn runs), a reload shows the same
// markers and meter, and other "/" text is a message.
func TestCompactionMeterAndMarker(t *testing.T) {
	t.Parallel()
	s := newServer(t, serverOpts{providers: []llm.Provider{compactionProvider(t)}})
	b := s.newBrowser()
	b.login(adminName, adminPass)
	b.newSession("ask")
	if pct, text := b.meter(); pct != 0 || !strings.Contains(text, "/ 6k") {
		t.Fatalf("new session meter %v %q, want 0%% of 6k", pct, text)
	}

	// The meter rises with every answer until the window is 80% full.
	var last float64
	prompts := []string{
		"Goal: build " + compactionGoal + ". Start with the parser.",
		"Now the evaluator.",
		"Add error handling.",
		"Add tests.",
	}
	for i, p := range prompts {
		b.send(p)
		b.waitTurns(i + 1)
		b.waitIdle()
		pct, text := b.meter()
		if pct <= last {
			t.Errorf("turn %d: meter %v%% (%q), not above %v%%", i+1, pct, text, last)
		}
		last = pct
	}
	if last < 80 {
		t.Fatalf("the meter reached only %v%% after %d turns: the window does not fill", last, len(prompts))
	}
	if b.count(".item.compaction") != 0 {
		t.Fatal("compacted before the window filled")
	}
	if lvl := eval[string](b, `document.getElementById("ctx-meter").dataset.level`); lvl != "high" {
		t.Errorf("meter level %q at %v%%, want high", lvl, last)
	}
	b.shot("compaction-meter")

	// The next turn starts above the threshold: the history is compacted
	// first, then answered.
	b.send("Write the README.")
	b.visible(".item.compaction")
	b.waitTurns(len(prompts) + 1)
	b.waitIdle()
	marker := b.text(".item.compaction > summary")
	if !strings.Contains(marker, "Conversation compacted") || !strings.Contains(marker, "tokens summarized") || !strings.Contains(marker, "automatic") {
		t.Errorf("marker %q", marker)
	}
	if open := eval[bool](b, `document.querySelector(".item.compaction").open`); open {
		t.Error("the marker is expanded by default")
	}
	b.click(".item.compaction > summary")
	summary := b.text(".item.compaction .compaction-summary")
	for _, want := range []string{"Primary Request and Intent", "Build " + compactionGoal, "Critical Context"} {
		if !strings.Contains(summary, want) {
			t.Errorf("the expanded summary lacks %q:\n%s", want, summary)
		}
	}
	if n := b.count(".item.compaction .compaction-summary h2"); n != 8 {
		t.Errorf("the summary renders %d section headings, want 8", n)
	}
	after, afterText := b.meter()
	if after >= last {
		t.Errorf("meter %v%% (%q) after the compacting turn, not below %v%%", after, afterText, last)
	}
	b.shot("compaction-marker")
	b.click(".item.compaction > summary")
	b.scrollToBottom()

	// /compact while a turn runs: busy, nothing sent to the model.
	users := b.count(".item.user")
	b.send("Explain it slowly.")
	b.waitJS("the slow turn to run", `document.getElementById("agent-status").dataset.status === "running"`)
	b.send("/compact")
	b.waitJS("the busy notice", `document.getElementById("toast")?.textContent.includes("busy")`)
	if got := b.text("#toast"); got != "The agent is busy — try /compact when it is idle." {
		t.Errorf("busy notice %q", got)
	}
	b.waitTurns(len(prompts) + 2)
	b.waitIdle()
	if n := b.count(".item.user"); n != users+1 {
		t.Errorf("%d new user bubbles, want 1 (/compact must not be sent)", n-users)
	}

	// /compact on the idle session: a manual marker, the meter drops.
	before, _ := b.meter()
	// How many automatic markers the window's pressure made depends on
	// the size of every request (the tools offered included): one more
	// is the manual one.
	markers := b.count(".item.compaction") + 1
	b.send("  /compact  ")
	b.waitJS("the compaction notice", `document.getElementById("toast")?.textContent.startsWith("Compacted")`)
	b.waitJS("the manual marker", fmt.Sprintf(`document.querySelectorAll(".item.compaction").length === %d`, markers))
	if pill := eval[string](b, `[...document.querySelectorAll(".item.compaction .pill")].pop()?.textContent ?? ""`); pill != "manual" {
		t.Errorf("second marker pill %q, want manual", pill)
	}
	b.waitJS("the meter to drop", fmt.Sprintf(`Number(document.getElementById("ctx-meter").dataset.percent) < %v`, before))
	if n := b.count(".item.user"); n != users+1 {
		t.Errorf("/compact became a message")
	}
	b.scrollToBottom()
	b.shot("compaction-manual")

	// A reload shows both markers and the meter as it is now, below the
	// usage of the last answer on the page.
	pct, text := b.meter()
	b.do(chromedp.Reload())
	b.waitSynced()
	if n := b.count(".item.compaction"); n != markers {
		t.Errorf("%d markers after a reload, want %d", n, markers)
	}
	b.waitJS("the meter after the reload", fmt.Sprintf(`Number(document.getElementById("ctx-meter").dataset.percent) === %v`, pct))
	if got := b.text("#ctx-meter"); got != text {
		t.Errorf("meter %q after the reload, %q before", got, text)
	}

	// Other text starting with "/" is an ordinary message.
	b.send("/help is not a command here")
	b.waitTurns(len(prompts) + 3)
	b.waitIdle()
	if got := eval[string](b, `[...document.querySelectorAll(".item.user .user-text")].pop()?.textContent ?? ""`); got != "/help is not a command here" {
		t.Errorf("last bubble %q", got)
	}
	if pct2, _ := b.meter(); pct2 <= pct {
		t.Errorf("meter %v%% after another answer, not above %v%%", pct2, pct)
	}
	b.noDuplicateIDs()
}
