package web_test

import (
	"net/http"
	"net/url"
	"slices"
	"testing"

	"harness/internal/config"
)

// Settings → Sandbox → Web fetch: an admin saves the allow-list (entries
// normalised, duplicates dropped), the page shows it and the configured
// entries; a bad entry is explained; a user may not change it.
func TestSettingsFetchHosts(t *testing.T) {
	t.Parallel()
	e := newPageEnvWith(t, func(c *config.Config) { c.FetchHosts = []string{"intranet.example"} })
	admin := e.login("admin", "admin-password")
	res, _ := admin.form("/settings/fetch-hosts", url.Values{"hosts": {"Docs.Example.com\nhttps://docs.example.com/\r\n127.0.0.1:8081, *.corp.example"}})
	wantStatus(t, "save", res, http.StatusSeeOther)
	got, err := e.app.Settings.FetchHosts(t.Context())
	if want := []string{"docs.example.com", "127.0.0.1:8081", "*.corp.example"}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("stored %q, %v; want %q", got, err, want)
	}
	_, body := admin.get("/settings")
	wantBody(t, "settings", body, `id="fetch-hosts"`, "docs.example.com\n127.0.0.1:8081\n*.corp.example</textarea>",
		"From HARNESS_FETCH_HOSTS: <code>intranet.example</code>")

	res, body = admin.form("/settings/fetch-hosts", url.Values{"hosts": {"ok.example\nexa_mple.com"}})
	wantStatus(t, "bad host", res, http.StatusBadRequest)
	wantBody(t, "bad host", body, "is not a host")
	if got, _ := e.app.Settings.FetchHosts(t.Context()); len(got) != 3 {
		t.Fatalf("a refused save changed the list: %q", got)
	}

	bob := e.login("bob", "bob-password")
	res, _ = bob.form("/settings/fetch-hosts", url.Values{"hosts": {"evil.example"}})
	wantStatus(t, "a user saves", res, http.StatusForbidden)
}
