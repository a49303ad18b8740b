package e2e_test

import (
	"maps"
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"
)

// The session footer (render.SessionFooter): on the page from the first
// paint, updated live once per turn end (never per chunk) without a
// reload, its figures those of the stored events (computed here
// independently, as the timeline test does), the same on a share link's
// page and after a reload, and one line on a phone.
func TestSessionFooter(t *testing.T) {
	t.Parallel()
	s := newServer(t, serverOpts{})
	b := s.newBrowser()
	b.login(adminName, adminPass)
	id := b.newSession("auto")

	// The first paint has it, with nothing counted yet.
	if f := b.figures(); f["turns"] != "0" || f["steps"] != "0" || f["ttft"] != "" || len(f) != 9 {
		t.Fatalf("a new session's footer %v, want 9 figures, 0 turns, no TTFT", f)
	}
	// A marker that a reload would lose, and a count of the footer's
	// replacements (each upsert replaces the element).
	eval[bool](b, `(() => {
		window.footerMarker = true;
		window.footerUpserts = 0;
		new MutationObserver((ms) => { for (const m of ms) for (const n of m.removedNodes) if (n.id === "session-figures") window.footerUpserts++; })
			.observe(document.getElementById("composer-area"), { childList: true });
		return true;
	})()`)

	// Turn 1 calls a tool that runs 0.3 s.
	b.send("run: sleep 0.3; echo footer-tool")
	b.waitTurns(1)
	b.waitIdle()
	b.waitJS("the footer to count turn 1", `document.querySelector('#session-figures [data-fig="turns"]').dataset.value === "1"`)
	f1 := b.figures()
	if ms, _ := strconv.ParseInt(f1["tool-time"], 10, 64); ms < 300 {
		t.Errorf("tool time %q ms after a 0.3 s tool call", f1["tool-time"])
	}
	if n, _ := strconv.Atoi(f1["steps"]); n < 2 {
		t.Errorf("steps %q: a tool call and the answer after it are two steps", f1["steps"])
	}

	// Turn 2 streams 400 chunks: the footer is replaced once, at its end.
	eval[bool](b, `(window.footerUpserts = 0, true)`)
	b.send("long: 400")
	b.waitJS("the answer to stream", `document.querySelector("#transcript [data-stream]")`)
	if n := eval[int](b, `window.footerUpserts`); n != 0 {
		t.Errorf("the footer was replaced %d times while the turn streamed", n)
	}
	if v := eval[string](b, `document.querySelector('#session-figures [data-fig="turns"]').dataset.value`); v != "1" {
		t.Errorf("turns %q while turn 2 runs, want 1 (turns count when they end)", v)
	}
	b.waitTurns(2)
	b.waitIdle()
	b.waitJS("the footer to count turn 2", `document.querySelector('#session-figures [data-fig="turns"]').dataset.value === "2"`)
	if n := eval[int](b, `window.footerUpserts`); n != 1 {
		t.Errorf("the footer was replaced %d times for one turn, want once", n)
	}
	if !eval[bool](b, `window.footerMarker === true`) {
		t.Fatal("the page reloaded: the footer did not update live")
	}

	// The figures are the stored events'.
	want := s.timelineOf(t, id).figures
	if want["turns"] != 2 {
		t.Fatalf("the store holds %v turns", want["turns"])
	}
	b.checkFigures(t, want)
	live := b.figures()
	// One line, each value shown before its name ("2 turns").
	if bad := eval[[]string](b, `[...document.querySelectorAll("#session-figures .sf-fig")].filter((d) => {
		const v = d.querySelector("dd").getBoundingClientRect(), n = d.querySelector("dt").getBoundingClientRect();
		const first = document.querySelector("#session-figures .sf-fig").getBoundingClientRect();
		return !(v.right <= n.left + 1 && Math.abs(v.top - n.top) < 2 && Math.abs(d.getBoundingClientRect().top - first.top) < 2 && d.textContent.trim() !== "");
	}).map((d) => d.dataset.fig)`); len(bad) > 0 {
		t.Errorf("figures %v are not one line of value-then-name", bad)
	}
	if g := eval[string](b, `(() => { const d = document.querySelector('#session-figures [data-fig="turns"]'); return d.querySelector("dd").textContent + " " + d.querySelector("dt").textContent; })()`); g != "2 turns" {
		t.Errorf("turns figure reads %q", g)
	}

	// A share link's page and a reload show the same figures.
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
	if g := guest.figures(); !maps.Equal(g, live) {
		t.Errorf("share link's footer %v, the owner's %v", g, live)
	}
	if !eval[bool](guest, `(() => { const r = document.getElementById("session-figures").getBoundingClientRect(); return r.height > 0 && r.bottom <= innerHeight + 1; })()`) {
		t.Error("the footer is not shown on the share link's page")
	}
	b.open("/sessions/" + id)
	b.waitSynced()
	if g := b.figures(); !maps.Equal(g, live) {
		t.Errorf("after a reload the footer %v, live it was %v", g, live)
	}

	// On a phone it is one line and the dock and composer keep within a
	// quarter of the screen.
	b.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateTouch))
	b.waitJS("the phone layout", `innerWidth === 390`)
	geo := eval[map[string]float64](b, `(() => {
		const f = document.getElementById("session-figures"), a = document.getElementById("composer-area");
		const line = parseFloat(getComputedStyle(f).lineHeight) || parseFloat(getComputedStyle(f).fontSize) * 1.4;
		return { h: f.getBoundingClientRect().height, line, area: a.getBoundingClientRect().height, inner: innerHeight,
			bottom: f.getBoundingClientRect().bottom, areaBottom: a.getBoundingClientRect().bottom };
	})()`)
	if geo["h"] <= 0 || geo["h"] > geo["line"]*1.5 {
		t.Errorf("the footer is %.0f px high on a phone, more than one %.0f px line", geo["h"], geo["line"])
	}
	if geo["area"] > geo["inner"]/4 {
		t.Errorf("the dock, composer and footer take %.0f px of %.0f", geo["area"], geo["inner"])
	}
	b.shot("footer-phone")
}
