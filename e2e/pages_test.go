package e2e_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestSettingsUsersAndListPages walks the other pages in the browser: no
// console error, and the main actions work through their forms.
func TestSettingsUsersAndListPages(t *testing.T) {
	t.Parallel()
	s := newServer(t, serverOpts{})
	b := s.newBrowser()
	b.login(adminName, adminPass)

	// Two sessions; one renamed and archived from the list.
	b.newSession("auto")
	b.send("hello one")
	b.waitTurns(1)
	id := b.newSession("ask")
	b.open("/")
	b.waitJS("two rows", `document.querySelectorAll(".session-row").length === 2`)
	b.shot("sessions")
	row := `.session-row[data-session="` + id + `"]`
	b.click(row + " .row-menu > summary")
	b.do(chromedp.SetValue(chromedp.CSS(row+` input[name=title]`), "Renamed here"))
	b.clickNav(row + ` .rename button`)
	b.open("/")
	b.waitJS("the new title", `document.querySelector('`+row+` .session-title')?.textContent === "Renamed here"`)
	b.click(row + " .row-menu > summary")
	b.clickNav(row + ` form[action$="/archive"] button`)
	b.waitJS("the flash", `document.querySelector(".flash")?.textContent.includes("archived")`)
	if n := b.count(row); n != 0 {
		t.Error("the archived session is still listed")
	}
	// Search finds message text.
	b.do(chromedp.SetValue(chromedp.CSS(`input[name=q]`), "hello one"))
	b.clickNav(`.search button`)
	if n := b.count(".session-row"); n != 1 {
		t.Errorf("search found %d sessions, want 1", n)
	}

	// Settings: the user's defaults.
	b.open("/settings")
	b.visible("#save-prefs")
	b.do(chromedp.SetValue(chromedp.ID("pref-mode"), "auto"))
	b.clickNav("#save-prefs")
	b.waitJS("saved", `document.querySelector(".flash")?.textContent.startsWith("Saved")`)
	if v := eval[string](b, `document.getElementById("pref-mode").value`); v != "auto" {
		t.Errorf("saved mode %q", v)
	}
	if !strings.Contains(b.text("#routes"), "Offline demo model") {
		t.Error("the routes section does not show the demo model")
	}
	b.shot("settings")

	// Users: create one and disable them.
	b.open("/admin/users")
	b.do(
		chromedp.SetValue(chromedp.CSS(`form[action="/admin/users"] input[name=name]`), "carol"),
		chromedp.SetValue(chromedp.CSS(`form[action="/admin/users"] input[name=password]`), "carol-password"),
	)
	b.clickNav("#create-user")
	b.waitJS("carol", `document.querySelector('tr[data-user="carol"]')`)
	b.clickNav(`tr[data-user="carol"] form[action$="/disabled"] button`)
	b.waitJS("carol disabled", `document.querySelector('tr[data-user="carol"]').innerText.includes("disabled")`)
	b.shot("users")
}
