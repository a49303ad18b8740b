package e2e_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// composerFocused is true when the composer has the keyboard focus.
const composerFocused = `document.activeElement?.id === "composer-input"`

// An approval takes the focus and is answered from the keyboard alone: y
// allows once (the command runs), n denies (also with the focus outside
// the panel), and the focus comes back to the composer each time; a
// question is answered with the arrows, Space and Enter.
func TestApprovalAndQuestionByKeyboard(t *testing.T) {
	t.Parallel()
	s := newServer(t, serverOpts{})
	b := s.newBrowser()
	b.login(adminName, adminPass)
	b.newSession("ask")

	b.send("run: echo keyboard-yes")
	b.visible(".tk-approval")
	b.waitJS(`"Allow once" to have the focus`, allowOnceFocused)
	if vis := eval[bool](b, `getComputedStyle(document.getElementById("composer")).display !== "none"`); vis {
		t.Error("the composer is still shown while an approval is pending")
	}
	if keys := eval[string](b, `document.querySelector(".tk-approval [data-decision=allow]").getAttribute("aria-keyshortcuts")`); keys != "y" {
		t.Errorf(`"Allow once" aria-keyshortcuts %q, want y`, keys)
	}
	b.do(pressAnswerKey("y"))
	b.waitTurns(1)
	if out := b.text(".tool-bash .term"); !strings.Contains(out, "keyboard-yes") {
		t.Errorf("the command allowed with y printed %q", out)
	}
	if st := b.text(".item.approval .prompt-state"); !strings.Contains(st, "allowed by admin") {
		t.Errorf("approval row after y: %q", st)
	}
	b.waitJS("the composer to get the focus back after y", composerFocused)

	// n with the focus outside the panel (the reader clicked the
	// conversation): the pending approval is still the one the key answers,
	// and the focus still comes back to the composer.
	b.send("run: echo keyboard-no")
	b.visible(".tk-approval")
	b.waitJS(`"Allow once" to have the focus`, allowOnceFocused)
	b.click("#transcript .item.user .user-text")
	if id := eval[string](b, `document.activeElement?.id ?? ""`); id == "composer-input" || eval[bool](b, allowOnceFocused) {
		t.Fatalf("the click left the focus on %q", id)
	}
	b.do(pressAnswerKey("n"))
	b.waitTurns(2)
	last := `[...document.querySelectorAll(".tool-bash")].at(-1)`
	if st := eval[string](b, last+`.dataset.status`); st != "error" {
		t.Errorf("the call denied with n has status %q, want error", st)
	}
	if out := eval[string](b, last+`.innerText`); strings.Contains(out, "\nkeyboard-no") {
		t.Errorf("the denied command ran: %q", out)
	}
	if st := eval[string](b, `[...document.querySelectorAll(".item.approval .prompt-state")].at(-1).innerText`); !strings.Contains(st, "denied") {
		t.Errorf("approval row after n: %q", st)
	}
	b.waitJS("the composer to get the focus back after n", composerFocused)

	// y and n typed in the composer are letters, not answers.
	b.do(chromedp.SendKeys(chromedp.ID("composer-input"), "yn"))
	if v := eval[string](b, `document.getElementById("composer-input").value`); v != "yn" {
		t.Errorf("typing y and n in the composer gave %q", v)
	}
	eval[bool](b, `(document.getElementById("composer-input").value = "", true)`)

	// A question: the first choice has the focus; ArrowDown moves to (and
	// picks) "no", Space keeps it, Enter answers.
	b.send("ask: keyboard?")
	b.visible(".tk-question")
	b.waitJS("the first choice to have the focus", `document.activeElement?.matches('.tk-question input[value="yes"]')`)
	b.do(chromedp.KeyEvent(kb.ArrowDown), chromedp.KeyEvent(" "))
	if v := eval[string](b, `document.querySelector(".tk-question input:checked")?.value ?? ""`); v != "no" {
		t.Fatalf("after ArrowDown and Space the choice is %q, want no", v)
	}
	b.do(pressEnter(0))
	b.waitTurns(3)
	if got := eval[string](b, `[...document.querySelectorAll(".item.assistant .md-body strong")].at(-1)?.textContent ?? ""`); got != "no" {
		t.Errorf("the model saw %q, want no", got)
	}
	if st := eval[string](b, `[...document.querySelectorAll(".item.question .prompt-state")].at(-1).innerText`); !strings.Contains(st, "answered: no") {
		t.Errorf("question row %q", st)
	}
	b.waitJS("the composer to get the focus back after the answer", composerFocused)
}

// pressTab sends Tab (Shift+Tab with shift) to the focused element.
func pressTab(shift bool) chromedp.Action[chromedp.Void] {
	if shift {
		return chromedp.KeyEvent(kb.Tab, chromedp.KeyModifiers(chromedp.ModifierShift))
	}
	return chromedp.KeyEvent(kb.Tab)
}

// pressAnswerKey presses a letter the way a keyboard does once the page
// handles its keydown: a raw key-down and a key-up. A browser suppresses
// the character of a prevented keydown; chromedp.KeyEvent sends the
// character as a separate event that nothing suppresses, and on a loaded
// machine it reached the composer the answer had just focused.
func pressAnswerKey(key string) chromedp.Action[chromedp.Void] {
	code := int64(strings.ToUpper(key)[0])
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		for _, typ := range []input.DispatchKeyEventType{input.DispatchKeyEventTypeRawKeyDown, input.DispatchKeyEventTypeKeyUp} {
			_, err := cdp.Call(ctx, t, input.DispatchKeyEvent, input.DispatchKeyEventParams{
				Type: typ, Key: key, Code: "Key" + strings.ToUpper(key), WindowsVirtualKeyCode: code, NativeVirtualKeyCode: code,
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
}
