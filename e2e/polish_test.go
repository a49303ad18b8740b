package e2e_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/llm/openai"
)

// shareGuest opens a share link of session id in a browser of its own.
func (s *server) shareGuest(id string) *browser {
	s.t.Helper()
	ctx := s.t.Context()
	admin, err := s.app.Auth.GetUser(ctx, adminName)
	if err != nil {
		s.t.Fatal(err)
	}
	tok, _, err := s.app.Auth.CreateShareLink(ctx, id, admin.ID, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	g := s.newBrowser()
	g.open("/s/" + tok)
	g.waitSynced()
	return g
}

// userTexts counts the user bubbles that say text.
func (b *browser) userTexts(text string) int {
	b.t.Helper()
	return eval[int](b, `[...document.querySelectorAll(".item.user .user-text")].filter(e => e.textContent === `+jsString(text)+`).length`)
}

// TestRetryFailedTurn: a turn that failed shows Retry in its error row;
// clicking it sends the turn's prompt again as a new message, which runs;
// a share-link viewer sees the error row without the button.
func TestRetryFailedTurn(t *testing.T) {
	t.Parallel()
	p := scriptedProvider(t, []fake.Reply{
		{Error: &fake.HTTPError{Status: 401, Message: "Incorrect API key provided"}},
		{Text: "Recovered after Retry."},
	}, llm.DefaultRetryPolicy())
	s := newServer(t, serverOpts{providers: []llm.Provider{p}})
	b := s.newBrowser()
	b.login(adminName, adminPass)
	id := b.newSession("ask")
	const prompt = "Please build the thing\nwith two lines."
	b.send(prompt)
	b.visible(".error-row .retry-turn")
	if turn := eval[string](b, `document.querySelector(".error-row .retry-turn").dataset.turn`); turn != "1" {
		t.Errorf("Retry names turn %q, want 1", turn)
	}
	b.waitIdle()

	guest := s.shareGuest(id)
	guest.waitJS("the error row", `document.querySelector(".error-row")`)
	if shown := eval[bool](guest, `getComputedStyle(document.querySelector(".error-row .retry-turn")).display !== "none"`); shown {
		t.Error("a share-link viewer sees Retry")
	}

	b.click(".error-row .retry-turn")
	b.waitJS("the prompt sent again", `document.querySelectorAll(".item.user").length === 2`)
	b.waitTurns(2)
	b.waitIdle()
	if n := b.userTexts(prompt); n != 2 {
		t.Errorf("%d bubbles with the prompt, want 2 (the failed one and the retry)", n)
	}
	if got := b.text("#transcript .item.assistant .md-body"); got != "Recovered after Retry." {
		t.Errorf("answer after Retry %q", got)
	}
	// The viewer follows live: the retried prompt and its answer.
	guest.waitJS("the viewer's answer", `document.querySelector("#transcript .item.assistant .md-body")?.innerText.trim() === "Recovered after Retry."`)
	if n := guest.userTexts(prompt); n != 2 {
		t.Errorf("the viewer shows %d bubbles with the prompt, want 2", n)
	}
	b.shot("retry-failed-turn")
}

// TestHeaderFollowsModelAndMode: switching the model (the picker, then
// /model) and the permission mode (the picker, then /mode) updates the
// header's model label and mode badge at once, without a reload, in this
// tab, another tab of the same user and a share-link viewer; the other
// tab's pickers follow too.
func TestHeaderFollowsModelAndMode(t *testing.T) {
	t.Parallel()
	p := scriptedProvider(t, nil, llm.DefaultRetryPolicy())
	s := newServer(t, serverOpts{providers: []llm.Provider{p}})
	b := s.newBrowser()
	b.login(adminName, adminPass)
	id := b.newSession("ask")
	tab := b.tab()
	tab.open("/sessions/" + id)
	tab.waitSynced()
	guest := s.shareGuest(id)
	views := map[string]*browser{"tab 1": b, "tab 2": tab, "share link": guest}
	for name, v := range views {
		if got := v.text("#model-label"); got != "Scripted · Scripted model" {
			t.Errorf("%s: model label %q at first", name, got)
		}
		if got := v.text("#mode-badge"); got != "Ask" {
			t.Errorf("%s: mode badge %q at first", name, got)
		}
		// A reload would lose this mark.
		eval[bool](v, `window.sameDocument = true`)
	}
	both := func(what, js string) {
		t.Helper()
		for name, v := range views {
			v.waitJS(name+": "+what, js)
		}
	}

	// The pickers.
	demo := eval[string](b, `[...document.getElementById("model-select").options].find(o => o.value.startsWith("demo/"))?.value ?? ""`)
	if demo == "" {
		t.Fatal("no demo model in the picker")
	}
	b.do(chromedp.SetValue(chromedp.ID("model-select"), demo))
	eval[bool](b, `document.getElementById("model-select").dispatchEvent(new Event("change", {bubbles: true}))`)
	both("the demo model's label", `document.getElementById("model-label")?.textContent === "Offline demo model" && document.getElementById("model-label").classList.contains("demo")`)
	tab.waitJS("tab 2's model picker", `document.getElementById("model-select").value === `+jsString(demo))
	b.do(chromedp.SetValue(chromedp.ID("mode-select"), "auto"))
	eval[bool](b, `document.getElementById("mode-select").dispatchEvent(new Event("change", {bubbles: true}))`)
	both("the auto badge", `document.getElementById("mode-badge")?.textContent === "Auto" && document.getElementById("mode-badge").dataset.mode === "auto"`)
	tab.waitJS("tab 2's mode picker", `document.getElementById("mode-select").value === "auto"`)
	b.shot("header-model-mode")

	// The commands.
	b.typeInComposer("/model ")
	b.typeInComposer("scripted")
	b.do(pressEnterKey())
	both("the scripted model's label", `document.getElementById("model-label")?.textContent === "Scripted · Scripted model" && !document.getElementById("model-label").classList.contains("demo")`)
	b.typeInComposer("/mode read-only")
	b.do(pressEnterKey())
	both("the read-only badge", `document.getElementById("mode-badge")?.textContent === "Read-only"`)

	for name, v := range views {
		if !eval[bool](v, `window.sameDocument === true`) {
			t.Errorf("%s reloaded", name)
		}
		if n := v.count("#model-label"); n != 1 {
			t.Errorf("%s: %d model labels", name, n)
		}
		if n := v.count("#mode-badge"); n != 1 {
			t.Errorf("%s: %d mode badges", name, n)
		}
	}
	// A reload shows the same.
	tab.do(chromedp.Reload())
	tab.waitSynced()
	if m, l := tab.text("#mode-badge"), tab.text("#model-label"); m != "Read-only" || l != "Scripted · Scripted model" {
		t.Errorf("after a reload: mode %q, model %q", m, l)
	}
}

// pressEnterKey is Enter without modifiers.
func pressEnterKey() chromedp.Action[chromedp.Void] { return pressEnter(0) }

// TestNewSessionFormEnter: Enter in the new-session prompt starts the
// session with that prompt (as the composer's Enter sends); Shift+Enter
// adds a line first.
func TestNewSessionFormEnter(t *testing.T) {
	t.Parallel()
	s := newServer(t, serverOpts{})
	b := s.newBrowser()
	b.login(adminName, adminPass)
	b.open("/")
	b.do(
		chromedp.SetValue(chromedp.ID("new-mode"), "auto"),
		chromedp.SetValue(chromedp.ID("new-prompt"), "first line"),
		chromedp.Focus(chromedp.ID("new-prompt")),
	)
	// Shift+Enter: a new line, no submit (Chromium inserts it for the
	// key event with its text).
	b.do(chromedp.KeyEvent(kb.Enter, chromedp.KeyModifiers(chromedp.ModifierShift)))
	if v := eval[string](b, `document.getElementById("new-prompt").value`); v != "first line\n" {
		t.Fatalf("after Shift+Enter the prompt holds %q", v)
	}
	if !eval[bool](b, `location.pathname === "/"`) {
		t.Fatal("Shift+Enter left the list page")
	}
	b.do(chromedp.SendKeys(chromedp.ID("new-prompt"), "second line"))
	b.do(pressEnter(0), chromedp.WaitVisible(chromedp.ID("composer-input")))
	b.waitSynced()
	b.waitJS("the first message", `document.querySelector(".item.user .user-text")`)
	if got := b.text(".item.user .user-text"); got != "first line\nsecond line" {
		t.Errorf("the session started with %q", got)
	}
	if got := b.text("#mode-badge"); got != "Auto" {
		t.Errorf("mode badge %q, want the form's Auto", got)
	}
	// The turn may not have started yet when the page is synced (the
	// status is idle then too): wait for the turn's end.
	b.waitTurns(1)
	b.waitIdle()
	if got := b.text("#transcript .item.assistant .md-body"); !strings.Contains(got, "offline demo model") {
		t.Errorf("the demo did not answer the prompt: %q", got)
	}
}

// TestUsageAndRoutePriceStyles: the figures of a priced turn (duration,
// time to first token, cost) and the route form's price group in Settings
// have their own styles: each differs from what it would inherit.
func TestUsageAndRoutePriceStyles(t *testing.T) {
	t.Parallel()
	srv := fake.NewServer(fake.Script{Replies: []fake.Reply{{Text: "A priced answer."}}})
	url := srv.Start(t)
	p, err := openai.New(openai.Config{
		Name: "priced", Label: "Priced", Kind: openai.KindOpenAI, BaseURL: url, APIKey: "sk-test", DefaultModel: "pm",
		Models: []llm.ModelInfo{{ID: "pm", Label: "Priced model", ContextWindow: 64_000, Price: &llm.Price{Input: 1, CachedInput: 0.5, Output: 2}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := newServer(t, serverOpts{providers: []llm.Provider{p}})
	b := s.newBrowser()
	b.login(adminName, adminPass)
	b.newSession("ask")
	b.send("hello")
	b.waitTurns(1)
	b.visible(".usage-turn .usage-cost")
	type look struct{ Weight, Style, Color, Parent string }
	get := func(sel string) look {
		return eval[look](b, `(() => { const e = document.querySelector(`+jsString(sel)+`), c = getComputedStyle(e), p = getComputedStyle(e.parentElement);
		  return {weight: c.fontWeight, style: c.fontStyle, color: c.color, parent: p.color}; })()`)
	}
	if l := get(".usage-turn .usage-duration"); l.Weight != "600" || l.Color == l.Parent {
		t.Errorf("the duration is not set off: %+v", l)
	}
	if l := get(".usage-turn .usage-ttft"); l.Style != "italic" {
		t.Errorf("the time to first token has no style: %+v", l)
	}
	if l := get(".usage-turn .usage-cost"); l.Weight != "600" || l.Color == l.Parent {
		t.Errorf("the cost is not set off: %+v", l)
	}

	b.open("/settings")
	b.waitJS("the route form's prices", `document.querySelector("fieldset.route-prices")`)
	eval[bool](b, `(document.querySelector("fieldset.route-prices").closest("details") ?? {}).open = true`)
	type group struct{ Border, Radius, Legend, Number, Text string }
	g := eval[group](b, `(() => { const f = document.querySelector("fieldset.route-prices"), c = getComputedStyle(f);
	  const num = f.querySelector("input[type=number]"), txt = document.querySelector("input[type=text]");
	  return {border: c.borderTopStyle + " " + c.borderTopColor, radius: c.borderTopLeftRadius,
	    legend: getComputedStyle(f.querySelector("legend")).fontWeight,
	    number: getComputedStyle(num).borderTopColor + " " + getComputedStyle(num).borderTopLeftRadius,
	    text: getComputedStyle(txt).borderTopColor + " " + getComputedStyle(txt).borderTopLeftRadius}; })()`)
	if g.Radius != "8px" || !strings.HasPrefix(g.Border, "solid ") || g.Legend != "600" {
		t.Errorf("the price group has the browser's default look: %+v", g)
	}
	if g.Number != g.Text {
		t.Errorf("price fields look unlike the other fields: number %q, text %q", g.Number, g.Text)
	}
}
