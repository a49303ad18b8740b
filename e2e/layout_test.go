package e2e_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

func TestPhoneWidthAndDarkTheme(t *testing.T) {
	t.Parallel()
	s := newServer(t, serverOpts{})
	b := s.newBrowser()
	b.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateTouch))
	b.login(adminName, adminPass)
	b.newSession("auto")
	b.send("write: notes.md\n# Notes\n\nSome text that is long enough to wrap on a phone screen, really.")
	b.waitTurns(1)
	b.send("run: printf 'a very long line without spaces: %s\\n' aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")
	b.waitTurns(2)
	// Nothing scrolls sideways; the sidebar is a closed drawer.
	if w := eval[bool](b, `document.documentElement.scrollWidth <= window.innerWidth`); !w {
		t.Errorf("the page scrolls sideways at phone width (%d > %d)", eval[int](b, `document.documentElement.scrollWidth`), eval[int](b, `window.innerWidth`))
	}
	if open := eval[bool](b, `document.getElementById("sidebar").getBoundingClientRect().right > 0`); open {
		t.Error("the sidebar covers the chat at phone width")
	}
	b.shot("phone-chat")
	b.click(".chat-head [data-action=toggle-sidebar]")
	b.waitJS("the drawer to open", `document.getElementById("sidebar").getBoundingClientRect().left >= 0`)
	b.shot("phone-drawer")
	b.click(".sidebar [data-action=toggle-sidebar]")
	b.waitJS("the drawer to close", `document.getElementById("sidebar").getBoundingClientRect().right <= 0`)

	// Dark: follows the system, and the theme button forces it.
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}},
	}); err != nil {
		t.Fatal(err)
	}
	bg := eval[string](b, `getComputedStyle(document.body).backgroundColor`)
	if bg != "rgb(15, 17, 21)" {
		t.Errorf("dark background %q", bg)
	}
	b.shot("phone-dark")
	// The theme button cycles system → light → dark, and a reload keeps it.
	b.do(chromedp.EmulateViewport(1280, 900))
	b.click("[data-action=theme]")
	if th := eval[string](b, `document.documentElement.dataset.theme ?? ""`); th != "light" {
		t.Errorf("theme after one click %q", th)
	}
	if bg := eval[string](b, `getComputedStyle(document.body).backgroundColor`); bg != "rgb(246, 247, 249)" {
		t.Errorf("forced light background %q", bg)
	}
	b.do(chromedp.Reload())
	b.waitSynced()
	if th := eval[string](b, `document.documentElement.dataset.theme ?? ""`); th != "light" {
		t.Errorf("theme after reload %q", th)
	}
	b.click("[data-action=theme]")
	b.shot("desktop-dark")
	if code := eval[string](b, `getComputedStyle(document.querySelector(".chroma .nx, .chroma .nb, .chroma .s, .chroma .k") ?? document.body).color`); strings.HasPrefix(code, "rgb(0, 0, 0)") {
		t.Errorf("code keeps black text in the dark theme: %s", code)
	}
}

// TestPhoneDockAndComposer: on a 390x844 phone the dock (a todo list and
// a queue) and the composer together take at most a quarter of the
// screen's height, while the agent runs (Steer, Stop, Queue) and after;
// what they hold scrolls inside them.
func TestPhoneDockAndComposer(t *testing.T) {
	t.Parallel()
	s := newServer(t, serverOpts{})
	b := s.newBrowser()
	b.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateTouch))
	b.login(adminName, adminPass)
	b.newSession("auto")
	quarter := func(when string) {
		t.Helper()
		h := eval[float64](b, `document.getElementById("composer-area").getBoundingClientRect().height`)
		inner := eval[float64](b, `window.innerHeight`)
		if h > inner/4 {
			t.Errorf("%s: the dock and composer take %.0f px of %.0f (more than a quarter)", when, h, inner)
		}
		t.Logf("%s: the dock and composer take %.0f px of %.0f", when, h, inner)
		if !eval[bool](b, `(() => { const r = document.getElementById("composer-input").getBoundingClientRect(); return r.height >= 30 && r.bottom <= window.innerHeight; })()`) {
			t.Errorf("%s: the composer's text field is not usable", when)
		}
	}
	quarter("empty")
	b.send("todo: plan the work; write the code; test it; fix what broke; write the docs; review; release; celebrate")
	b.waitTurns(1)
	b.waitJS("the todo dock", `!document.getElementById("todo-dock").classList.contains("hidden")`)
	quarter("with a todo list")
	b.streamLong(3000)
	for _, m := range []string{"queued one", "queued two", "queued three"} {
		b.send(m)
	}
	b.waitJS("three queued", `document.querySelectorAll("#queue-list .queue-item").length === 3`)
	quarter("running, with a todo list and a queue")
	b.shot("phone-dock-composer")
	// A long message stays inside the bound too.
	b.do(chromedp.SetValue(chromedp.ID("composer-input"), strings.Repeat("a long line of text ", 60)))
	eval[bool](b, `document.getElementById("composer-input").dispatchEvent(new Event("input"))`)
	quarter("typing a long message")
	b.click("#stop-btn")
	b.waitIdle()
	quarter("stopped, with a paused queue")
}
