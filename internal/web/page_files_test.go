package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"harness/internal/auth"
)

// The Files panel: on the chat pages of readers (owner and viewer), its
// fragments render the tree and a highlighted file, and a share-link page
// has neither panel nor access.
func TestFilesPanelPages(t *testing.T) {
	t.Parallel()
	e := newPageEnv(t)
	admin := e.login("admin", "admin-password")
	id := admin.newSession("write: src/hello.go\npackage main\n\nfunc main() {}", "auto")
	ctx := t.Context()
	if err := e.app.Auth.AddMember(ctx, id, "bob", auth.SessionRoleViewer); err != nil {
		t.Fatal(err)
	}
	bob := e.login("bob", "bob-password")

	for who, u := range map[string]*user{"owner": admin, "viewer": bob} {
		res, body := u.get("/sessions/" + id)
		wantStatus(t, who+" chat page", res, http.StatusOK)
		if !strings.Contains(body, `id="files-button"`) || !strings.Contains(body, `id="files-panel" data-base="/sessions/`+id+`/files"`) {
			t.Errorf("%s: no files panel on the chat page", who)
		}
		res, body = u.get("/sessions/" + id + "/files/tree?path=")
		wantStatus(t, who+" tree", res, http.StatusOK)
		if !strings.Contains(body, `data-files-action="toggle" data-path="src" aria-expanded="false"`) || res.Header.Get("Content-Security-Policy") == "" {
			t.Errorf("%s tree: %s", who, body)
		}
		res, body = u.get("/sessions/" + id + "/files/tree?path=src")
		if res.StatusCode != 200 || !strings.Contains(body, `data-files-action="open" data-path="src/hello.go"`) {
			t.Errorf("%s src: %d %s", who, res.StatusCode, body)
		}
		res, body = u.get("/sessions/" + id + "/files/view?path=" + url.QueryEscape("src/hello.go"))
		if res.StatusCode != 200 || !strings.Contains(body, `<span class="kd">func</span>`) ||
			!strings.Contains(body, `href="/sessions/`+id+`/files/download?path=src%2Fhello.go"`) {
			t.Errorf("%s view: %d %s", who, res.StatusCode, body)
		}
		res, body = u.get("/sessions/" + id + "/files/download?path=src/hello.go")
		if res.StatusCode != 200 || body != "package main\n\nfunc main() {}" || !strings.HasPrefix(res.Header.Get("Content-Disposition"), "attachment") {
			t.Errorf("%s download: %d %q", who, res.StatusCode, body)
		}
	}
	// Errors of the fragments are JSON for the script.
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.app.URL+"/sessions/"+id+"/files/view?path=nope", nil)
	req.Header.Set("Accept", "application/json")
	res, err := admin.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 404 || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		t.Errorf("missing file view: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}

	// A share link: no panel on its page, and no files.
	u, err := e.app.Auth.GetUser(ctx, "admin")
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := e.app.Auth.CreateShareLink(ctx, id, u.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	anon := &user{e: e, c: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	res, body := anon.get("/s/" + tok)
	wantStatus(t, "share page", res, http.StatusOK)
	if strings.Contains(body, "files-panel") || strings.Contains(body, "files-button") {
		t.Error("the share-link page has the files panel")
	}
	for _, p := range []string{"/files/tree?path=", "/files/view?path=src/hello.go", "/files/download?path=src/hello.go"} {
		if res, _ := anon.get("/sessions/" + id + p); res.StatusCode != http.StatusSeeOther {
			t.Errorf("anonymous %s: %d", p, res.StatusCode)
		}
	}
}
