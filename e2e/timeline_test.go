package e2e_test

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"harness/internal/llm"
	"harness/internal/render"
	"harness/internal/session"
)

// The timeline panel on a session with tool calls: lanes and bars whose
// spans are the stored events' times, the session figures as computed
// from the stored events (tokens as the usage rows sum them), search,
// jumps from an entry and from a bar to the transcript, live growth while
// a turn streams, the keyboard, and the same strip and figures on a share
// link's page.
func TestTimelinePanel(t *testing.T) {
	t.Parallel()
	s := newServer(t, serverOpts{})
	b := s.newBrowser()
	b.login(adminName, adminPass)
	id := b.newSession("auto")
	b.send("run: sleep 0.3; echo timeline-tool")
	b.waitTurns(1)
	b.waitIdle()
	// A long code block in the answer pushes turn 1 out of view.
	b.send("run: seq 1 90")
	b.waitTurns(2)
	b.waitIdle()

	// The keyboard opens it (focus in the search), Esc closes it (focus
	// back on the button; the turn is not stopped: none runs).
	b.do(chromedp.Focus(chromedp.ID("timeline-button")), chromedp.KeyEvent(kb.Enter))
	b.waitJS("the panel to open with the focus in its search",
		`!document.getElementById("timeline-panel").hidden && document.activeElement?.id === "tl-search"`)
	if exp := b.text(`#timeline-button`); exp != "Timeline" || eval[string](b, `document.getElementById("timeline-button").getAttribute("aria-expanded")`) != "true" {
		t.Errorf("toggle %q not expanded", exp)
	}
	b.waitTimeline()

	want := s.timelineOf(t, id)
	b.checkTimeline(t, want)
	b.shot("timeline")

	// Search filters the entries.
	total := b.count("#tl-entries .tl-row")
	b.do(chromedp.SendKeys(chromedp.ID("tl-search"), "timeline-tool"))
	b.waitJS("the search to filter", `document.querySelectorAll("#tl-entries .tl-row:not([hidden])").length < `+strconv.Itoa(total))
	shown := eval[[]string](b, `[...document.querySelectorAll("#tl-entries .tl-row:not([hidden])")].map((li) => li.innerText)`)
	if len(shown) == 0 {
		t.Fatal("the search hides every entry")
	}
	for _, s := range shown {
		if !containsFold(s, "timeline-tool") {
			t.Errorf("entry %q shown for the search %q", s, "timeline-tool")
		}
	}
	if c := b.text("#tl-count"); c != fmt.Sprintf("%d of %d", len(shown), total) {
		t.Errorf("count %q, want %d of %d", c, len(shown), total)
	}
	b.do(pressEscape()) // clears the search, keeps the panel
	b.waitJS("the search to clear", `document.querySelectorAll("#tl-entries .tl-row[hidden]").length === 0 && !document.getElementById("timeline-panel").hidden`)

	// An entry jumps to its item: turn 1's message, out of view.
	const inView = `((el) => { if (!el) return false; const r = el.getBoundingClientRect(), s = document.getElementById("scroller").getBoundingClientRect(); return r.top >= s.top - 1 && r.bottom <= s.bottom + 1; })`
	first := `document.querySelector("#transcript .item.user")`
	if eval[bool](b, inView+`(`+first+`)`) {
		t.Fatal("turn 1's message is in view before the jump: the test proves nothing")
	}
	b.click(`#tl-entries .tl-entry[data-kind="user"]`)
	b.waitJS("turn 1's message scrolled into view", inView+`(`+first+`)`)
	if !eval[bool](b, first+`.classList.contains("tl-flash") && document.querySelector('.tl-entry[data-kind="user"]').getAttribute("aria-current") === "true"`) {
		t.Error("the jump does not mark the item and the entry")
	}
	// A bar jumps too: the last model request's answer, at the bottom.
	last := `document.querySelector("#transcript [id^='b-2-2-']")`
	if eval[bool](b, inView+`(`+last+`)`) {
		t.Fatal("turn 2's answer is in view before the jump")
	}
	eval[bool](b, `(document.querySelectorAll('.tl-bar[data-kind="assistant"]')[3].click(), true)`)
	b.waitJS("turn 2's answer scrolled into view", `(() => { const el = `+last+`; const r = el.getBoundingClientRect(), s = document.getElementById("scroller").getBoundingClientRect(); return r.top < s.bottom && r.bottom > s.top; })()`)

	// Live: a streaming request's bar is open and grows.
	b.send("long: 1500")
	b.waitJS("an open model bar", `document.querySelector('.tl-bar[data-kind="assistant"][data-open]')`)
	d0 := eval[int64](b, `Number(document.querySelector('.tl-bar[data-kind="assistant"][data-open]').dataset.dur)`)
	// (Its entry says so meanwhile.)
	b.waitJS("the open bar to grow while it streams, its entry running", fmt.Sprintf(`(() => { const b = document.querySelector('.tl-bar[data-kind="assistant"][data-open]'); return b && Number(b.dataset.dur) > %d + 200 && document.querySelector('.tl-entry[data-tl-key="' + b.dataset.tlKey + '"] .tl-entry-dur')?.textContent.includes("running"); })()`, d0))
	b.waitTurns(3)
	b.waitIdle()
	b.waitJS("the bar to close", `!document.querySelector(".tl-bar[data-open]") && document.querySelectorAll('.tl-bar[data-kind="assistant"]').length === 5`)
	if n := b.count(`.tl-group[data-turn="3"] .tl-entry[data-kind="assistant"]`); n != 1 {
		t.Errorf("%d assistant entries in turn 3, want 1", n)
	}
	// A step's input is listed before the request it went into, also when
	// the request's row was drawn first (live).
	if k := eval[[]string](b, `[...document.querySelectorAll('.tl-group[data-turn="3"] .tl-entry')].map((e) => e.dataset.kind)`); len(k) < 2 || k[0] != "user" || k[len(k)-1] != "assistant" {
		t.Errorf("turn 3 lists %v, want the user message first and the model request last", k)
	}

	// Esc on the panel closes it; the focus goes back to the toggle.
	b.do(chromedp.Focus(chromedp.ID("tl-search")), pressEscape())
	b.waitJS("the panel to close", `document.getElementById("timeline-panel").hidden && document.activeElement?.id === "timeline-button"`)

	// A share link's page has the panel, built from the link's route,
	// with the same spans and figures (the live turn included).
	ctx := t.Context()
	u, err := s.app.Auth.GetUser(ctx, adminName)
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := s.app.Auth.CreateShareLink(ctx, id, u.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	guest := s.newBrowser()
	guest.open("/s/" + tok)
	guest.waitSynced()
	guest.click("#timeline-button")
	guest.waitTimeline()
	guest.checkTimeline(t, s.timelineOf(t, id))
	guest.shot("timeline-share")
	// On a phone the panel sits below the transcript, both in view.
	guest.do(chromedp.EmulateViewport(390, 844))
	guest.waitJS("the panel below the transcript", `(() => { const p = document.getElementById("timeline-panel").getBoundingClientRect(), s = document.getElementById("scroller").getBoundingClientRect(); return p.top >= s.bottom - 1 && p.bottom <= innerHeight + 1 && p.width > 300 && s.height > 150; })()`)
	guest.shot("timeline-phone")
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}

// waitTimeline waits until the open panel has read the session.
func (b *browser) waitTimeline() {
	b.t.Helper()
	b.waitJS("the timeline to load", `document.querySelector("#tl-strip .tl-bar") && document.getElementById("tl-state").textContent === ""`)
}

// span is a bar's extent in event time (ms).
type span struct{ Start, End int64 }

// timelineWant is what the panel must show, from the stored events.
type timelineWant struct {
	model, tools, input []span
	figures             map[string]float64
}

// timelineOf reads session id's stored events and computes the strip's
// spans and the session figures from them, independently of the page:
// a model request runs from its step/start (or llm/retry-started) to its
// assistant/message, its time to first token to its first delta; a tool
// from tool/call to tool/result; tokens are the usage rows' (render's fold).
func (s *server) timelineOf(t *testing.T, id string) timelineWant {
	t.Helper()
	ctx := t.Context()
	if err := s.app.Writer.Flush(ctx, id); err != nil {
		t.Fatal(err)
	}
	evs, err := s.app.Store.EventsSince(ctx, id, -1, 0)
	if err != nil {
		t.Fatal(err)
	}
	var w timelineWant
	type req struct {
		start, first int64
		hasFirst     bool
	}
	open := map[string]*req{}
	calls := map[string]int64{}
	var turns, steps, modelMs, toolMs, ttftSum, ttftN, streamMs, rated float64
	for _, ev := range evs {
		switch ev.Type {
		case session.TypeTurnStart:
			turns++
		case session.TypeStepStart, session.TypeLLMRetryStarted:
			var sb session.StepBoundary
			mustJSON(t, ev.Data, &sb)
			if ev.Type == session.TypeStepStart {
				steps++
			}
			open[fmt.Sprint(sb.Turn, "/", sb.Step)] = &req{start: ev.Time}
		case session.TypeAssistantChunk:
			var c session.AssistantChunk
			mustJSON(t, ev.Data, &c)
			r := open[fmt.Sprint(c.Turn, "/", c.Step)]
			switch c.Chunk.Type {
			case llm.ChunkTextDelta, llm.ChunkReasoningDelta, llm.ChunkToolCallDelta:
				if r != nil && !r.hasFirst {
					r.first, r.hasFirst = ev.Time, true
				}
			}
		case session.TypeAssistantMessage:
			var am session.AssistantMessage
			mustJSON(t, ev.Data, &am)
			k := fmt.Sprint(am.Turn, "/", am.Step)
			r := open[k]
			if r == nil {
				t.Fatalf("assistant/message #%d without a request start", ev.Seq)
			}
			delete(open, k)
			w.model = append(w.model, span{r.start, ev.Time})
			modelMs += float64(ev.Time - r.start)
			if r.hasFirst {
				ttftSum += float64(r.first - r.start)
				ttftN++
				if am.Usage != nil && ev.Time > r.first {
					streamMs += float64(ev.Time - r.first)
					rated += float64(am.Usage.OutputTokens)
				}
			}
		case session.TypeToolCall:
			var c session.ToolCall
			mustJSON(t, ev.Data, &c)
			calls[c.CallID] = ev.Time
		case session.TypeToolResult:
			var r session.ToolResult
			mustJSON(t, ev.Data, &r)
			for _, b := range r.Message.Content {
				if b.Type == llm.BlockToolResult {
					w.tools = append(w.tools, span{calls[b.ToolCallID], ev.Time})
					toolMs += float64(ev.Time - calls[b.ToolCallID])
				}
			}
		case session.TypeUserMessage:
			var m llm.Message
			mustJSON(t, ev.Data, &m)
			if m.Source.Kind == llm.SourceUser {
				w.input = append(w.input, span{ev.Time, ev.Time})
			}
		}
	}
	// Tokens as the turns' usage rows count them.
	var prompt, cached, out float64
	for _, it := range s.app.Markdown.Fold(evs, render.FoldOptions{}).Items {
		if u, ok := it.(*render.UsageItem); ok {
			prompt += float64(u.Prompt())
			cached += float64(u.CachedTokens())
			out += float64(u.Usage.OutputTokens)
		}
	}
	if ttftN == 0 || streamMs == 0 || prompt == 0 {
		t.Fatalf("the session has no timed requests (%v TTFTs, %v ms streamed, %v tokens in)", ttftN, streamMs, prompt)
	}
	w.figures = map[string]float64{
		"turns": turns, "steps": steps, "model-time": modelMs, "tool-time": toolMs,
		"ttft": math.Round(ttftSum / ttftN), "tokens-per-sec": rated / (streamMs / 1000),
		"cache-hit": cached / prompt, "tokens-in": prompt, "tokens-out": out,
	}
	return w
}

func mustJSON(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

// checkTimeline compares the panel with want: one lane each, every bar's
// span, positive durations of model and tool bars, and the page footer's
// figures (the server's, which the panel does not repeat).
func (b *browser) checkTimeline(t *testing.T, want timelineWant) {
	t.Helper()
	for _, lane := range []string{"input", "model", "tools"} {
		if n := b.count(`#tl-strip .tl-lane[data-lane="` + lane + `"]`); n != 1 {
			t.Errorf("%d %s lanes, want 1", n, lane)
		}
	}
	bars := func(sel string) []span {
		got := eval[[][2]string](b, `[...document.querySelectorAll(`+jsString(sel)+`)].map((b) => [b.dataset.start, b.dataset.end])`)
		out := make([]span, len(got))
		for i, g := range got {
			s, _ := strconv.ParseInt(g[0], 10, 64)
			e, _ := strconv.ParseInt(g[1], 10, 64)
			out[i] = span{s, e}
		}
		return out
	}
	for _, c := range []struct {
		name     string
		sel      string
		want     []span
		positive bool
	}{
		{"model", `.tl-lane[data-lane="model"] .tl-bar[data-kind="assistant"]`, want.model, true},
		{"tools", `.tl-lane[data-lane="tools"] .tl-bar[data-kind="tool"]`, want.tools, true},
		{"user input", `.tl-lane[data-lane="input"] .tl-bar[data-kind="user"]`, want.input, false},
	} {
		got := bars(c.sel)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s bars %v, want %v (from the stored events)", c.name, got, c.want)
		}
		for _, s := range got {
			if c.positive && s.End <= s.Start {
				t.Errorf("%s bar %v has no duration", c.name, s)
			}
		}
	}
	if d := eval[int64](b, `Number(document.querySelector('.tl-bar[data-kind="tool"]').dataset.dur)`); d < 300 {
		t.Errorf("the first tool (sleep 0.3) lasted %d ms on the strip", d)
	}
	if n := b.count(`.tl-bar[data-kind="assistant"] .tl-ttft`); n != len(want.model) {
		t.Errorf("%d model bars show a time to first token, want %d", n, len(want.model))
	}
	b.checkFigures(t, want.figures)
}

// checkFigures compares the footer's figures (data-value) with want.
func (b *browser) checkFigures(t *testing.T, want map[string]float64) {
	t.Helper()
	// The footer follows the turn/end fragments; the status may be idle
	// before the last one is applied.
	b.waitJS("the footer to count every turn", fmt.Sprintf(`document.querySelector('#session-figures [data-fig="turns"]')?.dataset.value === "%d"`, int(want["turns"])))
	got := b.figures()
	for k, w := range want {
		g, err := strconv.ParseFloat(got[k], 64)
		if err != nil || math.Abs(g-w) > 1e-6*math.Max(1, math.Abs(w)) {
			t.Errorf("figure %s = %q, want %v", k, got[k], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("figures %v, want the keys of %v", got, want)
	}
	t.Logf("figures: %v", b.text("#session-figures"))
}

// figures reads the footer's figures: data-fig → data-value.
func (b *browser) figures() map[string]string {
	b.t.Helper()
	return eval[map[string]string](b, `Object.fromEntries([...document.querySelectorAll("#session-figures .sf-fig")].map((d) => [d.dataset.fig, d.dataset.value]))`)
}

// On a long session the panel reads the log in several pages, and an
// entry older than the page holds loads older history pages until its
// item is there, then scrolls to it.
func TestTimelineJumpLoadsOlderPages(t *testing.T) {
	t.Parallel()
	s := newServer(t, serverOpts{})
	id := seedHistory(t, s, adminName, 300) // 2,100 events: two pages of the route
	b := s.newBrowser()
	b.login(adminName, adminPass)
	b.open("/sessions/" + id)
	b.waitSynced()
	b.click("#timeline-button")
	b.waitTimeline()
	if n := b.count(`.tl-bar[data-kind="assistant"]`); n != 300 {
		t.Errorf("%d model bars, want 300", n)
	}
	if v := eval[string](b, `document.querySelector('#session-figures [data-fig="turns"]').dataset.value`); v != "300" {
		t.Errorf("turns figure %q, want 300", v)
	}
	bubble := `[...document.querySelectorAll("#transcript .item.user")].find((e) => e.querySelector(".user-text")?.textContent === "question 3")`
	if eval[bool](b, `!!`+bubble) {
		t.Fatal("turn 3 is on the first page: the test proves nothing")
	}
	b.click(`.tl-group[data-turn="3"] .tl-entry[data-kind="user"]`)
	b.waitJS("turn 3's message loaded and scrolled into view", `(() => { const el = `+bubble+`; if (!el) return false; const r = el.getBoundingClientRect(), s = document.getElementById("scroller").getBoundingClientRect(); return r.top >= s.top - 1 && r.bottom <= s.bottom + 1; })()`, 40*time.Second)
	b.noDuplicateIDs()
}
