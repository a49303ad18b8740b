package web_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// Creating a share link redirects to the sharing page, which shows the
// link once: reloading it neither shows the token again nor creates
// another link.
func TestCreateLinkRedirectsAndShowsOnce(t *testing.T) {
	t.Parallel()
	e := newPageEnv(t)
	bob := e.login("bob", "bob-password")
	id := bob.newSession("", "")
	sharing := "/sessions/" + id + "/sharing"
	newLink := regexp.MustCompile(`id="new-link"[^>]*|value="https?://[^"]+/s/[A-Za-z0-9_-]+"`)

	res, _ := bob.form("/sessions/"+id+"/links", nil)
	if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || loc != sharing {
		t.Fatalf("create link: %d to %q, want 303 to %s", res.StatusCode, loc, sharing)
	}
	res, page := bob.get(sharing)
	if res.StatusCode != http.StatusOK || !newLink.MatchString(page) {
		t.Fatalf("after the redirect: %d, the new link is not shown", res.StatusCode)
	}
	if cc := res.Header.Get("Cache-Control"); cc != "no-store" {
		t.Fatalf("the page with the token has Cache-Control %q", cc)
	}
	for range 2 { // reloads
		_, page = bob.get(sharing)
		if newLink.MatchString(page) {
			t.Fatal("a reload shows the token again")
		}
	}
	if n := strings.Count(page, `<span class="muted">active</span>`); n != 1 {
		t.Fatalf("%d active links listed, want 1", n)
	}
}
