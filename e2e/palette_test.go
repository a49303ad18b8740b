package e2e_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"harness/internal/llm"
)

// paletteState is what the slash-command palette shows.
type paletteState struct {
	Open     bool
	Options  []string
	Selected []string
	Active   string // the composer's aria-activedescendant, as option text
}

func (b *browser) palette() paletteState {
	b.t.Helper()
	return eval[paletteState](b, `(() => {
	  const list = document.getElementById("slash-palette");
	  const input = document.getElementById("composer-input");
	  const opts = [...(list?.querySelectorAll("[role=option]") ?? [])];
	  const name = (o) => o.querySelector(".palette-name").textContent;
	  const active = document.getElementById(input.getAttribute("aria-activedescendant") ?? "");
	  return {
	    open: !!list && !list.hidden && list.getAttribute("role") === "listbox" && input.getAttribute("aria-controls") === list.id,
	    options: opts.map(name),
	    selected: opts.filter((o) => o.getAttribute("aria-selected") === "true").map(name),
	    active: active && list.contains(active) ? name(active) : "",
	  };
	})()`)
}

// typeInComposer types text into the composer with real key events.
func (b *browser) typeInComposer(text string) {
	b.t.Helper()
	b.do(chromedp.SendKeys(chromedp.ID("composer-input"), text))
}

// The slash-command palette: "/" lists the commands, typing filters,
// the arrows move the selection (aria-activedescendant follows), Esc
// closes it without stopping anything, "/com" + Enter compacts and
// "/mode" + Enter + "read-only" + Enter sets the permission mode.
func TestSlashCommandPalette(t *testing.T) {
	t.Parallel()
	// The scripted route writes a valid checkpoint, so /compact compacts;
	// with the demo model beside it there is a model to switch to.
	s := newServer(t, serverOpts{providers: []llm.Provider{compactionProvider(t)}})
	b := s.newBrowser()
	b.login(adminName, adminPass)
	b.newSession("ask")
	// Enough history that a checkpoint is smaller than what it replaces.
	for i, m := range []string{"Goal: build " + compactionGoal + ".", "Now the evaluator.", "Add error handling."} {
		b.send(m)
		b.waitTurns(i + 1)
		b.waitIdle()
	}

	b.typeInComposer("/")
	p := b.palette()
	want := []string{"/compact", "/model", "/mode", "/fork", "/export", "/clear", "/help"}
	if !p.Open || strings.Join(p.Options, " ") != strings.Join(want, " ") {
		t.Fatalf("after / the palette is %+v, want the options %q", p, want)
	}
	if p.Active != "/compact" || strings.Join(p.Selected, " ") != "/compact" {
		t.Errorf("the first option is not selected: %+v", p)
	}
	b.do(chromedp.KeyEvent(kb.ArrowDown), chromedp.KeyEvent(kb.ArrowDown))
	if p := b.palette(); p.Active != "/mode" || strings.Join(p.Selected, " ") != "/mode" {
		t.Errorf("after ArrowDown twice: %+v, want /mode", p)
	}
	b.do(chromedp.KeyEvent(kb.ArrowUp), chromedp.KeyEvent(kb.ArrowUp), chromedp.KeyEvent(kb.ArrowUp))
	if p := b.palette(); p.Active != "/help" {
		t.Errorf("ArrowUp past the first option: %+v, want /help (it wraps)", p)
	}
	if id := eval[string](b, `document.activeElement?.id`); id != "composer-input" {
		t.Errorf("the arrows moved the focus to %q", id)
	}

	// Typing filters; Escape closes the list and keeps the text.
	b.typeInComposer("com")
	if p := b.palette(); strings.Join(p.Options, " ") != "/compact" || p.Active != "/compact" {
		t.Errorf("after /com: %+v", p)
	}
	b.do(pressEscape())
	if p := b.palette(); p.Open || len(p.Options) != 0 {
		t.Errorf("Escape left the palette open: %+v", p)
	}
	if v := eval[string](b, `document.getElementById("composer-input").value`); v != "/com" {
		t.Errorf("Escape changed the text to %q", v)
	}
	if eval[string](b, `document.getElementById("composer-input").getAttribute("aria-activedescendant") ?? ""`) != "" {
		t.Error("aria-activedescendant stays after Escape")
	}

	// Typing again reopens it; Enter runs /compact.
	b.do(chromedp.KeyEvent(kb.Backspace))
	if p := b.palette(); !p.Open || p.Active != "/compact" {
		t.Fatalf("after editing /co: %+v", p)
	}
	b.typeInComposer("m")
	b.do(pressEnter(0))
	b.waitJS("the compaction's answer", `document.getElementById("toast")?.textContent.startsWith("Compacted")`)
	b.waitJS("the manual compaction marker", `document.querySelector("#transcript .item.compaction")`)
	if v := eval[string](b, `document.getElementById("composer-input").value`); v != "" {
		t.Errorf("after /compact the composer holds %q", v)
	}
	if kind := eval[string](b, `document.getElementById("toast").dataset.kind ?? ""`); kind == "error" {
		t.Errorf("/compact failed: %s", b.text("#toast"))
	}
	if b.hasUserText("/com") || b.hasUserText("/compact") {
		t.Error("the command was sent as a message")
	}

	// /mode takes an argument: Enter completes it and lists the modes.
	b.typeInComposer("/mode")
	b.do(pressEnter(0))
	if v := eval[string](b, `document.getElementById("composer-input").value`); v != "/mode " {
		t.Errorf("Enter on /mode left %q, want it completed to %q", v, "/mode ")
	}
	if p := b.palette(); strings.Join(p.Options, " ") != "/mode ask /mode auto /mode read-only" {
		t.Errorf("the modes listed: %+v", p)
	}
	b.typeInComposer("read-only")
	if p := b.palette(); strings.Join(p.Options, " ") != "/mode read-only" || p.Active != "/mode read-only" {
		t.Errorf("after /mode read-only: %+v", p)
	}
	b.do(pressEnter(0))
	b.waitJS("the mode notice", `[...document.querySelectorAll("#transcript .notice")].some(n => n.textContent.includes("Permission mode: read-only"))`)
	if m := eval[string](b, `document.getElementById("mode-select").value`); m != "read-only" {
		t.Errorf("the mode control shows %q, want read-only", m)
	}
	if p := b.palette(); p.Open {
		t.Errorf("the palette stayed open after running a command: %+v", p)
	}

	// /model lists the routes' models; typing filters them, Enter switches.
	b.typeInComposer("/model ")
	models := b.palette().Options
	if len(models) < 2 {
		t.Fatalf("/model lists %q, want the models of the picker", models)
	}
	b.typeInComposer("demo")
	p = b.palette()
	if len(p.Options) != 1 || !strings.HasPrefix(p.Active, "/model ") || !strings.Contains(p.Active, "demo") {
		t.Fatalf("after /model demo: %+v", p)
	}
	b.do(pressEnter(0))
	b.waitJS("the model notice", `[...document.querySelectorAll("#transcript .notice")].some(n => n.textContent.includes("Model: ") && n.textContent.includes("demo"))`)
	if v := eval[string](b, `document.getElementById("model-select").value`); "/model "+v != p.Active {
		t.Errorf("the model picker shows %q after %q", v, p.Active)
	}

	// A message that only starts with "/" and matches no command is sent
	// as written.
	b.typeInComposer("/etc/hosts is a file")
	if p := b.palette(); p.Open {
		t.Errorf("the palette is open for a path: %+v", p)
	}
	b.do(pressEnter(0))
	b.waitJS("the message", `[...document.querySelectorAll(".item.user .user-text")].some(e => e.textContent === "/etc/hosts is a file")`)

	// /help lists the commands above the composer.
	b.waitIdle()
	b.typeInComposer("/help")
	b.do(pressEnter(0))
	b.waitJS("the help", `!document.getElementById("toast").hidden && document.querySelector("#toast .help-list")`)
	if h := b.text("#toast"); !strings.Contains(h, "/compact") || !strings.Contains(h, "/mode …") || !strings.Contains(h, "allow once / deny") {
		t.Errorf("help text %q", h)
	}
}
