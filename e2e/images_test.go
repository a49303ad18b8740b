package e2e_test

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"harness/internal/auth"
	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/testkit"
)

// jsFile is a JS expression building a File of data.
func jsFile(name, mediaType string, data []byte) string {
	return fmt.Sprintf(`new File([Uint8Array.from(atob(%q), (c) => c.charCodeAt(0))], %q, {type: %q})`,
		base64.StdEncoding.EncodeToString(data), name, mediaType)
}

// paste pastes a file into the composer as the clipboard would.
func (b *browser) pasteFile(file string) {
	b.t.Helper()
	eval[bool](b, `(() => { const dt = new DataTransfer(); dt.items.add(`+file+`);
		return document.getElementById("composer-input").dispatchEvent(new ClipboardEvent("paste", {clipboardData: dt, bubbles: true, cancelable: true})); })()`)
}

// dropFile drops a file onto the composer.
func (b *browser) dropFile(file string) {
	b.t.Helper()
	eval[bool](b, `(() => { const dt = new DataTransfer(); dt.items.add(`+file+`);
		const form = document.getElementById("composer");
		form.dispatchEvent(new DragEvent("dragover", {dataTransfer: dt, bubbles: true, cancelable: true}));
		return form.dispatchEvent(new DragEvent("drop", {dataTransfer: dt, bubbles: true, cancelable: true})); })()`)
}

// bubbleImages waits until the newest user bubble shows n loaded images
// and returns their srcs and natural sizes ("src WxH").
func (b *browser) bubbleImages(n int) []string {
	b.t.Helper()
	sel := `[...document.querySelectorAll("#transcript .item.user")].filter((u) => u.querySelector(".user-images")).pop()`
	b.waitJS(fmt.Sprintf("%d loaded images in the bubble", n), `(() => { const u = `+sel+`;
		const imgs = u ? [...u.querySelectorAll(".user-images img")] : [];
		return imgs.length === `+fmt.Sprint(n)+` && imgs.every((i) => i.complete && i.naturalWidth > 0); })()`)
	return eval[[]string](b, `[...(`+sel+`).querySelectorAll(".user-images img")].map((i) => new URL(i.src).pathname + " " + i.naturalWidth + "x" + i.naturalHeight)`)
}

// TestImages: images pasted, dropped and picked in the composer upload at
// once and show as thumbnails (one removed before sending); sent with the
// text, they show in the user bubble, the demo model describes what it
// received (type, bytes, pixels), and the images are there again after a
// reload, for a viewer and on the share-link page, live there too.
func TestImages(t *testing.T) {
	t.Parallel()
	s := newServer(t, serverOpts{})
	b := s.newBrowser()
	b.login(adminName, adminPass)
	id := b.newSession("auto")

	pngB, gifB, webpB := testkit.PNG(t, 64, 48), testkit.GIF(t, 5, 7), testkit.WebP()
	if n := b.count(`#attach-btn:not([hidden])[aria-label]`); n != 1 {
		t.Fatal("no labelled Image button in the composer")
	}
	b.pasteFile(jsFile("pasted.png", "image/png", pngB))
	b.dropFile(jsFile("dropped.gif", "image/gif", gifB))
	picked := filepath.Join(t.TempDir(), "picked.webp")
	if err := os.WriteFile(picked, webpB, 0o644); err != nil {
		t.Fatal(err)
	}
	b.do(chromedp.SetUploadFiles(chromedp.ID("attach-input"), []string{picked}))
	b.waitJS("three uploaded thumbnails", `document.querySelectorAll('#composer-images .composer-image[data-state=ready] img[src]').length === 3`)
	if n := b.count(`#composer-images button[data-action=remove-image][aria-label^="Remove image"]`); n != 3 {
		t.Errorf("%d labelled remove buttons", n)
	}
	// The dropped GIF goes again before sending.
	b.click(`#composer-images .composer-image:nth-child(2) [data-action=remove-image]`)
	b.waitJS("two thumbnails", `document.querySelectorAll('#composer-images .composer-image').length === 2`)
	b.shot("images-composer")

	b.send("what are these?")
	b.waitTurns(1)
	b.waitJS("the thumbnails to go", `document.getElementById("composer-images").hidden`)
	live := b.bubbleImages(2)
	for i, want := range []string{" 64x48", fmt.Sprintf(" %dx%d", testkit.WebPWidth, testkit.WebPHeight)} {
		if !strings.HasPrefix(live[i], "/sessions/"+id+"/attachments/") || !strings.HasSuffix(live[i], want) {
			t.Errorf("image %d: %s, want the session's route and %s", i, live[i], want)
		}
	}
	answer := eval[string](b, `[...document.querySelectorAll("#transcript .item.assistant .md-body")].pop()?.innerText ?? ""`)
	for _, line := range []string{
		fmt.Sprintf("image/png, %d bytes, 64 x 48 pixels", len(pngB)),
		fmt.Sprintf("image/webp, %d bytes, %d x %d pixels", len(webpB), testkit.WebPWidth, testkit.WebPHeight),
	} {
		if !strings.Contains(answer, line) {
			t.Errorf("the demo's answer lacks %q:\n%s", line, answer)
		}
	}
	if strings.Contains(answer, "image/gif") {
		t.Error("the removed image was sent")
	}
	// A click opens the image full size: a link to it, in a new tab.
	if n := b.count(`#transcript .user-images a.user-image[target=_blank][aria-label^="Open the image full size"] > img[alt]`); n != 2 {
		t.Errorf("%d labelled full-size links", n)
	}
	b.shot("images-transcript")

	b.open("/sessions/" + id)
	b.waitSynced()
	if got := b.bubbleImages(2); strings.Join(got, ",") != strings.Join(live, ",") {
		t.Errorf("after a reload: %v, want %v", got, live)
	}

	// A viewer sees them; the share-link page links its own route, also
	// for an image sent while it watches.
	ctx := t.Context()
	if err := s.app.Auth.AddMember(ctx, id, bobName, auth.SessionRoleViewer); err != nil {
		t.Fatal(err)
	}
	bob := s.newBrowser()
	bob.login(bobName, bobPass)
	bob.open("/sessions/" + id)
	bob.waitSynced()
	bob.bubbleImages(2)

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
	for _, src := range guest.bubbleImages(2) {
		if !strings.HasPrefix(src, "/s/"+tok+"/attachments/") {
			t.Errorf("share page image %s", src)
		}
	}
	b.pasteFile(jsFile("second.png", "image/png", testkit.PNG(t, 10, 20)))
	b.waitJS("the uploaded thumbnail", `document.querySelector('#composer-images .composer-image[data-state=ready]')`)
	// An image alone: no text.
	b.do(chromedp.Focus(chromedp.ID("composer-input")), pressEnter(0))
	got := guest.bubbleImages(1)
	if len(got) != 1 || !strings.HasPrefix(got[0], "/s/"+tok+"/attachments/") || !strings.HasSuffix(got[0], " 10x20") {
		t.Errorf("live on the share page: %v", got)
	}
	b.waitTurns(2)
}

// TestImagesRefused: a file that is not an image is refused in the
// composer with a message; an image to a route that takes none is refused
// when sent, and the text and image stay in the composer.
func TestImagesRefused(t *testing.T) {
	t.Parallel()
	_, plain := testkit.FakeRoute(t, fake.Script{}, testkit.RouteOptions{Name: "plain", Label: "Plain"})
	s := newServer(t, serverOpts{providers: []llm.Provider{plain}})
	b := s.newBrowser()
	b.login(adminName, adminPass)
	id := b.newSession("auto")
	b.expectHTTPError("/api/sessions/"+id+"/attachments", 415)
	b.pasteFile(jsFile("notes.png", "image/png", []byte("not a png at all")))
	b.waitJS("the refusal", `document.getElementById("composer-hint").textContent.includes("not an image")`)
	b.click(`#composer-images [data-action=remove-image]`)
	b.waitJS("no thumbnail", `document.getElementById("composer-images").hidden`)

	b.pasteFile(jsFile("ok.png", "image/png", testkit.PNG(t, 4, 4)))
	b.waitJS("the uploaded thumbnail", `document.querySelector('#composer-images .composer-image[data-state=ready]')`)
	b.do(chromedp.SetValue(chromedp.ID("composer-input"), "look"), chromedp.Focus(chromedp.ID("composer-input")), pressEnter(0))
	b.waitJS("the route's refusal", `document.getElementById("composer-hint").textContent.includes("does not accept images")`)
	if v := eval[string](b, `document.getElementById("composer-input").value`); v != "look" {
		t.Errorf("the composer lost the text: %q", v)
	}
	if n := b.count(`#composer-images .composer-image[data-state=ready]`); n != 1 {
		t.Errorf("the composer lost the image: %d", n)
	}
	if n := b.count(`#transcript .item.user`); n != 0 {
		t.Errorf("a refused message shows in the transcript (%d bubbles)", n)
	}
}
