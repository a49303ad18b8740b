package e2e_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

func TestLoginLogout(t *testing.T) {
	t.Parallel()
	s := newServer(t, serverOpts{})
	b := s.newBrowser()

	// Anonymous: the start page sends us to the login form.
	b.open("/")
	b.visible("#password")
	if loc := eval[string](b, `location.pathname`); loc != "/login" {
		t.Fatalf("anonymous / went to %s, want /login", loc)
	}
	b.shot("login")

	// A wrong password is refused with one generic message.
	b.expectHTTPError("/login", 401)
	b.do(
		chromedp.SetValue(chromedp.ID("name"), adminName),
		chromedp.SetValue(chromedp.ID("password"), "wrong-password"),
		chromedp.Submit(chromedp.ID("password")),
		chromedp.WaitVisible(chromedp.CSS(".error")),
	)
	if msg := b.text(".error"); !strings.Contains(msg, "Invalid name or password") {
		t.Fatalf("error message %q", msg)
	}

	b.login(adminName, adminPass)
	if got := b.text("#whoami"); got != adminName {
		t.Fatalf("signed in as %q", got)
	}
	b.visible("#new-prompt")
	b.shot("sessions-empty")

	b.click("#sign-out")
	b.visible("#password")
	// The cookie is gone: the start page asks again.
	b.open("/")
	b.visible("#password")
}
