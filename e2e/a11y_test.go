package e2e_test

import (
	"fmt"
	"strings"
	"testing"
)

// unnamedControlsJS lists the page's controls (everything that can take
// the focus, shown or not: menus, panels and drawers open later) that have
// no accessible name, computed as assistive technology would: aria-
// labelledby, aria-label, a label (for= or around it), the text of a
// button, link or summary, a submit input's value, an image's alt, title.
// A placeholder is not a name.
const unnamedControlsJS = `(() => {
  const text = (el) => (el?.textContent ?? "").replace(/\s+/g, " ").trim();
  const name = (el) => {
    const by = el.getAttribute("aria-labelledby");
    if (by) {
      const t = by.split(/\s+/).map((id) => text(document.getElementById(id))).join(" ").trim();
      if (t) return t;
    }
    const aria = (el.getAttribute("aria-label") ?? "").trim();
    if (aria) return aria;
    if (el.labels && el.labels.length) {
      const t = [...el.labels].map(text).join(" ").trim();
      if (t) return t;
    }
    if (el.matches("input[type=submit], input[type=button], input[type=reset]") && el.value.trim()) return el.value.trim();
    if (el.matches("button, a, summary, [role=button], [role=link], [role=tab], [role=option]")) {
      const t = text(el) || [...el.querySelectorAll("img[alt]")].map((i) => i.alt).join(" ").trim();
      if (t) return t;
    }
    return (el.getAttribute("title") ?? "").trim();
  };
  const controls = document.querySelectorAll('a[href], button, input:not([type=hidden]), select, textarea, summary, [tabindex]:not([tabindex="-1"]), [contenteditable=""], [contenteditable=true]');
  const bad = [];
  for (const el of controls) if (!name(el)) bad.push(el.outerHTML.slice(0, 160));
  return { count: controls.length, bad };
})()`

// firstTabStopJS is the first element of the page's tab order: rendered,
// enabled, tabindex >= 0, positive tabindex first, then document order.
const firstTabStopJS = `(() => {
  const all = [...document.querySelectorAll('a[href], button, input:not([type=hidden]), select, textarea, summary, [tabindex]')]
    .filter((el) => el.tabIndex >= 0 && !el.disabled && el.getClientRects().length > 0 && getComputedStyle(el).visibility !== "hidden");
  all.sort((a, b) => (a.tabIndex || Infinity) - (b.tabIndex || Infinity));
  return all[0]?.id || all[0]?.outerHTML.slice(0, 120) || "";
})()`

// The chat page has landmarks (main, the sidebar's nav, the chat header),
// a skip link as its first tab stop that moves the focus to the
// conversation, an accessible name on every control (with a question
// panel, the Files panel and the session menu open), and a focus ring of
// at least 3:1 on every tab stop in the light and the dark theme.
func TestChatPageLandmarksNamesAndFocus(t *testing.T) {
	t.Parallel()
	s := newServer(t, serverOpts{})
	b := s.newBrowser()
	b.login(adminName, adminPass)
	b.newSession("ask")
	b.send("ask: named?")
	b.visible(".tk-question")
	b.click("#files-button")
	b.waitJS("the files panel", `!document.getElementById("files-panel").hidden && document.querySelector("#files-tree .ft-list")`)
	b.click(".chat-menu > summary")

	// Landmarks.
	for sel, want := range map[string]int{
		"main#main":                          1,
		"nav#sidebar[aria-label]":            1,
		"main header#chat-head":              1,
		"section#scroller[aria-label]":       1,
		"form#composer textarea[aria-label]": 1,
		"body > a.skip-link:first-child":     1,
		"main main, nav nav":                 0,
	} {
		if n := b.count(sel); n != want {
			t.Errorf("%d of %q, want %d", n, sel, want)
		}
	}

	// Names.
	type walk struct {
		Count int
		Bad   []string
	}
	w := eval[walk](b, unnamedControlsJS)
	t.Logf("%d controls named", w.Count)
	if w.Count < 30 {
		t.Fatalf("only %d controls found: the walk missed the page", w.Count)
	}
	for _, el := range w.Bad {
		t.Errorf("control without an accessible name: %s", el)
	}

	// The skip link: first in the tab order; from the top of the page Tab
	// reaches it (shown), and Enter moves the focus to the conversation.
	b.click(".chat-menu > summary") // close the menu again
	if first := eval[string](b, firstTabStopJS); first != "skip-link" {
		t.Errorf("the first tab stop is %q, want the skip link", first)
	}
	if l := b.text("#skip-link"); l != "Skip to the conversation" {
		t.Errorf("skip link text %q", l)
	}
	b.fromPageTop()
	b.do(pressTab(false))
	if id := eval[string](b, `document.activeElement?.id ?? ""`); id != "skip-link" {
		t.Fatalf("Tab from the top of the page focused %q, want the skip link", id)
	}
	if on := eval[bool](b, `(() => { const r = document.getElementById("skip-link").getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight && r.width > 20; })()`); !on {
		t.Error("the focused skip link is not on screen")
	}
	b.do(pressEnter(0))
	b.waitJS("the conversation to have the focus", `document.activeElement?.id === "scroller"`)
	if on := eval[bool](b, `(() => { const r = document.getElementById("skip-link").getBoundingClientRect(); return r.bottom <= 0; })()`); !on {
		t.Error("the skip link stays on screen without the focus")
	}
	if h := eval[string](b, `location.hash`); h != "" {
		t.Errorf("the skip link left %q in the address", h)
	}

	// The focus ring, on the first tab stops of the page, in both themes.
	eval[bool](b, contrastJS)
	for _, theme := range []string{"light", "dark"} {
		b.setTheme(theme)
		b.fromPageTop()
		for i := range 14 {
			b.do(pressTab(false))
			ring := eval[string](b, `(() => {
			  const el = document.activeElement;
			  const cs = getComputedStyle(el);
			  const what = el.id || el.outerHTML.slice(0, 80);
			  if (!el.matches(":focus-visible")) return what + ": not :focus-visible";
			  if (cs.outlineStyle === "none" || parseFloat(cs.outlineWidth) < 2) return what + ": outline " + cs.outlineStyle + " " + cs.outlineWidth;
			  // The ring is drawn outside the element (offset), over its parent's
			  // background; an inset ring (negative offset) over the element's own.
			  const under = parseFloat(cs.outlineOffset) < 0 ? el : el.parentElement;
			  const bg = wcag.background(under);
			  const r = wcag.ratio(wcag.over(wcag.parse(cs.outlineColor), bg), bg);
			  return r >= 3 ? "" : what + ": ring " + cs.outlineColor + " on " + wcag.hex(bg) + " = " + r.toFixed(2);
			})()`)
			if ring != "" {
				t.Errorf("%s theme, tab stop %d: %s", theme, i+1, ring)
			}
		}
	}
}

// fromPageTop puts the keyboard's starting point before everything on the
// page (a focused probe as body's first child, removed after the next Tab)
// so that Tab goes to the page's first tab stop.
func (b *browser) fromPageTop() {
	b.t.Helper()
	eval[bool](b, `(() => {
	  document.getElementById("tab-probe")?.remove();
	  const p = document.createElement("span");
	  p.id = "tab-probe";
	  p.tabIndex = -1;
	  document.body.prepend(p);
	  p.focus();
	  p.addEventListener("blur", () => p.remove(), { once: true });
	  return document.activeElement === p;
	})()`)
}

// The other signed-in pages (the session list, settings) name every
// control and start with a skip link to their content.
func TestPagesNamesAndSkipLink(t *testing.T) {
	t.Parallel()
	s := newServer(t, serverOpts{})
	b := s.newBrowser()
	b.login(adminName, adminPass)
	b.newSession("ask")
	for _, path := range []string{"/", "/settings", "/admin/users"} {
		b.open(path)
		b.visible("#sidebar")
		type walk struct {
			Count int
			Bad   []string
		}
		w := eval[walk](b, unnamedControlsJS)
		if w.Count < 5 {
			t.Errorf("%s: only %d controls found", path, w.Count)
		}
		for _, el := range w.Bad {
			t.Errorf("%s: control without an accessible name: %s", path, el)
		}
		if first := eval[string](b, firstTabStopJS); first != "skip-link" {
			t.Errorf("%s: the first tab stop is %q, want the skip link", path, first)
		}
		b.fromPageTop()
		b.do(pressTab(false), pressEnter(0))
		b.waitJS(fmt.Sprintf("%s: the content to have the focus", path), `document.activeElement?.id === "main"`)
		if n := b.count("main#main"); n != 1 {
			t.Errorf("%s: %d main landmarks", path, n)
		}
		if strings.TrimSpace(b.text("#skip-link")) != "Skip to the content" {
			t.Errorf("%s: skip link %q", path, b.text("#skip-link"))
		}
	}
}
