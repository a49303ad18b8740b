package e2e_test

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// TestEffortInTheHeader: the owner turns thinking off in the chat header's
// "Reasoning effort" select; a viewer's (disabled) select follows at once,
// the next answer comes without reasoning (the demo model thinks only when
// the request enables it), and a reload shows the choice.
func TestEffortInTheHeader(t *testing.T) {
	t.Parallel()
	s := newServer(t, serverOpts{})
	owner := s.newBrowser()
	owner.login(adminName, adminPass)
	id := owner.newSession("auto")
	owner.open("/sessions/" + id + "/sharing")
	owner.do(
		chromedp.SetValue(chromedp.CSS(`input[name=name]`), bobName),
		chromedp.SetValue(chromedp.CSS(`select[name=role]`), "viewer"),
	)
	owner.clickNav("#add-member")
	owner.waitJS("the member", `document.getElementById("members").innerText.includes("bob")`)
	owner.open("/sessions/" + id)
	owner.waitSynced()

	sel := `#chat-head select[aria-label="Reasoning effort"]`
	owner.visible(sel)
	if got := eval[[]string](owner, `[...document.querySelectorAll('#effort-select option')].map(o => o.value + "=" + o.textContent)`); len(got) != 5 ||
		got[0] != "=Default (High)" || got[1] != "off=Off" || got[4] != "max=Max" {
		t.Fatalf("effort options %q, want the default (High), then off, low, high, max", got)
	}
	if eval[bool](owner, `document.getElementById("effort-select").disabled`) {
		t.Fatal("the owner's effort select is disabled")
	}

	owner.send("hello with thinking")
	owner.waitTurns(1)
	if n := owner.count(".item.reasoning"); n == 0 {
		t.Fatal("the default effort gave no reasoning")
	}
	reasoned := owner.count(".item.reasoning")

	bob := s.newBrowser()
	bob.login(bobName, bobPass)
	bob.open("/sessions/" + id)
	bob.waitSynced()
	bob.visible(sel)
	if !eval[bool](bob, `document.getElementById("effort-select").disabled`) {
		t.Error("a viewer's effort select is enabled")
	}

	owner.do(chromedp.Focus(chromedp.ID("effort-select")))
	eval[bool](owner, `(() => { const s = document.getElementById("effort-select"); s.value = "off"; s.dispatchEvent(new Event("change", {bubbles: true})); return true })()`)
	bob.waitJS("the viewer's select to follow", `document.getElementById("effort-select").value === "off"`)
	bob.waitJS("the notice in the viewer's transcript", `document.getElementById("transcript").innerText.includes("Thinking off")`)

	owner.send("hello without thinking")
	owner.waitTurns(2)
	if n := owner.count(".item.reasoning"); n != reasoned {
		t.Errorf("%d reasoning blocks after thinking was turned off, want still %d", n, reasoned)
	}

	owner.open("/sessions/" + id)
	owner.waitSynced()
	if v := eval[string](owner, `document.getElementById("effort-select").value`); v != "off" {
		t.Errorf("after a reload the select shows %q, want off", v)
	}
	owner.shot("effort-header")
}
