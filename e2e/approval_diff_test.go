package e2e_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
)

// pressEscape sends the Escape key to the focused element.
func pressEscape() chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		for _, typ := range []input.DispatchKeyEventType{input.DispatchKeyEventTypeRawKeyDown, input.DispatchKeyEventTypeKeyUp} {
			_, err := cdp.Call(ctx, t, input.DispatchKeyEvent, input.DispatchKeyEventParams{
				Type: typ, Key: "Escape", Code: "Escape", WindowsVirtualKeyCode: 27, NativeVirtualKeyCode: 27,
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
}

const allowOnceFocused = `document.activeElement?.matches(".tk-approval button[data-decision=allow]")`

// A write approval shows the diff and takes the keyboard focus; "Allow
// write for this session" lets later writes run without a panel, the
// allowed line shows it (also after a reload) and revoking it brings the
// prompt back.
func TestApprovalDiffAllowForSession(t *testing.T) {
	t.Parallel()
	s := newServer(t, serverOpts{})
	b := s.newBrowser()
	b.login(adminName, adminPass)
	b.newSession("ask")

	b.send("write: notes.txt\nfirst line\nsecond line")
	b.visible(".tk-approval .tk-diff")
	if p := b.text(".tk-approval .tk-change .path"); p != "notes.txt" {
		t.Errorf("the approval names %q, want notes.txt", p)
	}
	if st := b.text(".tk-approval .diffstat"); st != "+2 -0" {
		t.Errorf("diff stats %q, want +2 -0", st)
	}
	if pill := b.text(".tk-approval .tk-change .pill"); pill != "new file" {
		t.Errorf("pill %q, want new file", pill)
	}
	adds := eval[[]string](b, `[...document.querySelectorAll(".tk-approval .tk-diff .dl-add")].map(e => e.textContent.trim())`)
	if strings.Join(adds, "|") != "+first line|+second line" {
		t.Errorf("added lines %q", adds)
	}
	if l := b.text(".tk-approval button[data-decision=allow-session]"); l != "Allow write for this session" {
		t.Errorf("session button %q", l)
	}
	// The panel has the keyboard focus, on "Allow once"; Escape decides
	// nothing.
	b.waitJS(`"Allow once" to have the focus`, allowOnceFocused)
	b.do(pressEscape())
	if n := b.count(".tk-approval"); n != 1 || !eval[bool](b, allowOnceFocused) {
		t.Fatalf("after Escape: %d panels, focus on %q", n, eval[string](b, `document.activeElement?.outerHTML.slice(0, 120) ?? ""`))
	}
	b.shot("approval-diff")

	b.click(`.tk-approval button[data-decision=allow-session]`)
	b.waitTurns(1)
	if st := b.text(".item.approval .prompt-state"); !strings.Contains(st, "allowed for this session by admin") {
		t.Errorf("approval row %q", st)
	}
	b.waitJS("the composer to get the focus back", `document.activeElement?.id === "composer-input"`)
	b.waitJS("the allowed line to show write", `document.querySelector("#allowed-tools:not([hidden]) .allowed-tool[data-tool=write]") !== null`)
	if line := b.text("#allowed-tools"); !strings.Contains(line, "Allowed this session:") || !strings.Contains(line, "write") {
		t.Errorf("allowed line %q", line)
	}

	// The second write runs with no panel.
	b.send("write: other.txt\nmore")
	b.waitTurns(2)
	if n := b.count(".tk-panel"); n != 0 {
		t.Error("the allowed write asked again")
	}
	if n := b.count(".item.approval"); n != 1 {
		t.Errorf("%d approval rows, want 1", n)
	}
	if st := eval[string](b, `[...document.querySelectorAll(".item.tool[data-tool=write]")].at(-1)?.dataset.status ?? ""`); st != "ok" {
		t.Errorf("second write status %q, want ok", st)
	}

	// A reload shows the allowed line from the subscribe snapshot.
	b.open(eval[string](b, `location.pathname`))
	b.waitSynced()
	b.waitJS("the allowed line after a reload", `document.querySelector("#allowed-tools:not([hidden]) .allowed-tool[data-tool=write]") !== null`)

	// Revoke: the line empties and the next write asks again, with focus.
	b.click(`#allowed-tools [data-action=revoke-tool][data-tool=write]`)
	b.waitJS("the allowed line to hide", `document.getElementById("allowed-tools")?.hidden === true`)
	b.send("write: third.txt\nagain")
	b.visible(".tk-approval .tk-diff")
	b.waitJS(`"Allow once" to have the focus again`, allowOnceFocused)
	b.click(`.tk-approval button[data-decision=allow]`)
	b.waitTurns(3)
	if n := b.count(".item.approval"); n != 2 {
		t.Errorf("%d approval rows, want 2", n)
	}
	if b.count("#allowed-tools .allowed-tool") != 0 {
		t.Error("allow once allowed the tool for the session")
	}
	b.noDuplicateIDs()
}

// A pending approval rendered with the page (a reload while it waits)
// shows its diff and takes the focus too.
func TestApprovalDiffAfterReload(t *testing.T) {
	t.Parallel()
	s := newServer(t, serverOpts{})
	b := s.newBrowser()
	b.login(adminName, adminPass)
	b.newSession("ask")
	b.send("write: notes.txt\nkept")
	b.visible(".tk-approval .tk-diff")
	b.open(eval[string](b, `location.pathname`))
	b.waitSynced()
	b.visible(".tk-approval .tk-diff")
	if n := b.count(".tk-approval"); n != 1 {
		t.Fatalf("%d panels after the reload", n)
	}
	if adds := eval[string](b, `document.querySelector(".tk-approval .tk-diff .dl-add")?.textContent.trim() ?? ""`); adds != "+kept" {
		t.Errorf("added line after the reload %q", adds)
	}
	b.waitJS(`"Allow once" to have the focus after the reload`, allowOnceFocused)
	b.click(`.tk-approval button[data-decision=deny]`)
	b.waitTurns(1)
	if st := b.text(".item.approval .prompt-state"); !strings.Contains(st, "denied") {
		t.Errorf("approval row %q", st)
	}
}
