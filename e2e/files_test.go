package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"harness/internal/auth"
)

const helloGo = "package main\n\nimport \"fmt\"\n\n// main greets.\nfunc main() {\n\tfmt.Println(\"hello, `files`\")\n}\n"

// openFilesPanel opens the panel and waits for the workspace's root.
func (b *browser) openFilesPanel() {
	b.t.Helper()
	b.click("#files-button")
	b.waitJS("the files panel", `!document.getElementById("files-panel").hidden && document.querySelector("#files-tree .ft-list")`)
}

// openFile expands dir and opens dir/name in the view.
func (b *browser) openFile(dir, name string) {
	b.t.Helper()
	b.click(`#files-tree .ft-row[data-path="` + dir + `"]`)
	b.waitJS("the directory's entries", `document.querySelector('#files-tree .ft-row[data-path="`+dir+`/`+name+`"]')`)
	b.click(`#files-tree .ft-row[data-path="` + dir + `/` + name + `"]`)
	b.waitJS("the file view", `document.querySelector('#files-view .fv[data-path="`+dir+`/`+name+`"]')`)
}

// TestFilesPanel: a file the agent wrote shows in the Files panel — tree
// loaded lazily, the file highlighted by the server, its download the
// exact bytes — for the owner and for a viewer, and the panel is absent on
// a share-link page.
func TestFilesPanel(t *testing.T) {
	t.Parallel()
	s := newServer(t, serverOpts{})
	b := s.newBrowser()
	b.login(adminName, adminPass)
	id := b.newSession("auto")
	b.send("write: src/hello.go\n" + strings.TrimSuffix(helloGo, "\n"))
	b.waitTurns(1)

	if got := eval[string](b, `document.getElementById("files-button").getAttribute("aria-expanded")`); got != "false" {
		t.Errorf("files button aria-expanded %q before opening", got)
	}
	b.openFilesPanel()
	if got := eval[string](b, `document.getElementById("files-button").getAttribute("aria-expanded")`); got != "true" {
		t.Errorf("files button aria-expanded %q when open", got)
	}
	// Lazy: src's entries are not loaded before it is expanded.
	if n := b.count(`#files-tree [data-path="src/hello.go"]`); n != 0 {
		t.Error("a collapsed directory's entries were loaded")
	}
	if got := eval[string](b, `document.querySelector('#files-tree .ft-row[data-path="src"]').getAttribute("aria-expanded")`); got != "false" {
		t.Errorf("src aria-expanded %q", got)
	}
	// Keyboard: the directory is a button; Enter expands it.
	b.do(chromedp.Focus(chromedp.CSS(`#files-tree .ft-row[data-path="src"]`)), chromedp.KeyEvent(kb.Enter))
	b.waitJS("src to expand by keyboard", `document.querySelector('#files-tree .ft-row[data-path="src"]').getAttribute("aria-expanded") === "true" && document.querySelector('#files-tree [data-path="src/hello.go"]')`)
	b.click(`#files-tree .ft-row[data-path="src/hello.go"]`)
	b.waitJS("the file view", `document.querySelector('#files-view .fv[data-path="src/hello.go"]')`)
	b.shot("files-panel")

	// Highlighted on the server: chroma token spans, the Go keywords
	// classed, the text exact.
	if n := b.count(`#files-view .code[data-lang="go"] pre.chroma span[class]`); n < 10 {
		t.Errorf("%d chroma spans in the file view", n)
	}
	if kw := b.text(`#files-view .chroma .kd`); kw != "func" {
		t.Errorf("keyword span %q, want func", kw)
	}
	if got := eval[string](b, `document.querySelector("#files-view pre.chroma").innerText`); strings.TrimRight(got, "\n") != strings.TrimRight(helloGo, "\n") {
		t.Errorf("shown text %q", got)
	}
	if cur := b.count(`#files-tree .ft-row[aria-current="true"][data-path="src/hello.go"]`); cur != 1 {
		t.Error("the open file is not marked current in the tree")
	}
	// The download link gives the exact bytes, as an attachment.
	type download struct {
		Body, Disposition, Type, Nosniff string
		Status                           int
	}
	got := evalAsync[download](b, `(async () => {
		const r = await fetch(document.querySelector("#files-view a.fv-download").href);
		return { Body: await r.text(), Status: r.status, Disposition: r.headers.get("content-disposition"),
			Type: r.headers.get("content-type"), Nosniff: r.headers.get("x-content-type-options") };
	})()`)
	// (The composer trims the prompt, so the file has no final newline.)
	if got.Status != 200 || got.Body != strings.TrimSuffix(helloGo, "\n") {
		t.Errorf("download: %d %q", got.Status, got.Body)
	}
	if got.Disposition != `attachment; filename=hello.go` || got.Type != "application/octet-stream" || got.Nosniff != "nosniff" {
		t.Errorf("download headers %+v", got)
	}

	// Refresh keeps src open and picks up a new file.
	b.send("write: src/more.txt\nmore")
	b.waitTurns(2)
	b.click(`#files-panel [data-files-action="refresh"]`)
	b.waitJS("the refreshed tree", `document.querySelector('#files-tree [data-path="src/more.txt"]') && document.querySelector('#files-view .fv[data-path="src/hello.go"]')`)

	// Escape closes the panel and gives the focus back to the button.
	b.do(chromedp.Focus(chromedp.CSS(`#files-panel [data-files-action="refresh"]`)), chromedp.KeyEvent(kb.Escape))
	b.waitJS("the panel to close", `document.getElementById("files-panel").hidden && document.activeElement?.id === "files-button"`)

	// A viewer (read-only page) browses too.
	ctx := t.Context()
	if err := s.app.Auth.AddMember(ctx, id, bobName, auth.SessionRoleViewer); err != nil {
		t.Fatal(err)
	}
	bob := s.newBrowser()
	bob.login(bobName, bobPass)
	bob.open("/sessions/" + id)
	bob.waitSynced()
	if n := bob.count("#composer"); n != 0 {
		t.Fatal("the viewer has a composer")
	}
	bob.openFilesPanel()
	bob.openFile("src", "hello.go")
	if kw := bob.text(`#files-view .chroma .kd`); kw != "func" {
		t.Errorf("viewer's keyword span %q", kw)
	}

	// A share link's page has no panel, and the routes refuse it.
	admin, err := s.app.Auth.GetUser(ctx, adminName)
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := s.app.Auth.CreateShareLink(ctx, id, admin.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	guest := s.newBrowser()
	guest.open("/s/" + tok)
	guest.waitSynced()
	if n := guest.count("#files-button, #files-panel"); n != 0 {
		t.Error("the share-link page has the files panel")
	}
	guest.expectHTTPError("/sessions/"+id+"/files/download?path=src%2Fhello.go", 401)
	if st := evalAsync[int](guest, `fetch("/sessions/`+id+`/files/download?path=src%2Fhello.go", {headers: {Accept: "application/json"}}).then(r => r.status)`); st != 401 {
		t.Errorf("anonymous download: %d", st)
	}
}

// TestFilesPanelPhone: on a phone the panel is a full-screen drawer.
func TestFilesPanelPhone(t *testing.T) {
	t.Parallel()
	s := newServer(t, serverOpts{})
	b := s.newBrowser()
	b.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateTouch))
	b.login(adminName, adminPass)
	b.newSession("auto")
	b.send("write: src/hello.go\n" + strings.TrimSuffix(helloGo, "\n"))
	b.waitTurns(1)
	b.openFilesPanel()
	b.openFile("src", "hello.go")
	full := eval[bool](b, `(() => { const r = document.getElementById("files-panel").getBoundingClientRect();
		return r.left === 0 && r.top === 0 && r.width === window.innerWidth && r.height === window.innerHeight; })()`)
	if !full {
		t.Error("the files panel does not cover the phone screen")
	}
	if w := eval[bool](b, `document.documentElement.scrollWidth <= window.innerWidth`); !w {
		t.Error("the page scrolls sideways with the files panel open")
	}
	b.shot("files-phone")
	b.click(`#files-panel [data-files-action="close"]`)
	b.waitJS("the drawer to close", `document.getElementById("files-panel").hidden`)
}

// evalAsync evaluates an expression whose value is a promise.
func evalAsync[T any](b *browser, js string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		b.fatal(fmt.Errorf("eval %s: %w", js, err))
	}
	return v
}
