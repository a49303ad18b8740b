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
