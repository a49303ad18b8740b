package e2e_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

const corpusDir = "/work/shared/corpus/dsh-sessions"

// upload picks file in the sessions page's Import control and submits it.
func (b *browser) upload(file string, then chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	b.open("/")
	b.do(
		chromedp.SetUploadFiles(chromedp.ID("import-file"), []string{file}),
		chromedp.Submit(chromedp.ID("import-file")),
		then,
	)
}

// The Import control: a DeepSeek Harness log uploaded from the sessions
// page opens as a chat whose transcript looks native (the prompt, the bash
// card, the answer); a message sent there runs a new turn. A log that
// cannot be converted brings the page back with the reason.
func TestImport(t *testing.T) {
	t.Parallel()
	srv := newServer(t, serverOpts{})
	b := srv.newBrowser()
	b.login(bobName, bobPass)

	file := filepath.Join(corpusDir, "examples--acp-agent--bash-tool-turn--session.jsonl")
	if _, err := os.Stat(file); err != nil {
		t.Fatal(err)
	}
	b.upload(file, chromedp.WaitVisible(chromedp.ID("composer-input")))
	b.waitSynced()
	if n := b.count(".item.user"); n != 1 {
		t.Fatalf("%d user bubbles, want the imported prompt", n)
	}
	if got := b.text(".item.user .user-text"); !strings.HasPrefix(got, "Use the bash tool to run exactly") {
		t.Fatalf("user bubble %q", got)
	}
	if n := b.count(`.item.tool[data-tool="bash"]`); n != 1 {
		t.Fatalf("%d bash cards", n)
	}
	if !eval[bool](b, `[...document.querySelectorAll(".item.assistant")].some(e => e.querySelector(".md-body")?.innerText.trim() === "DONE")`) {
		t.Fatal("no imported answer")
	}
	if got := b.text("h1"); !strings.Contains(got, "Use the bash tool to") {
		t.Fatalf("title %q", got)
	}
	b.noDuplicateIDs()
	b.shot("import-chat")

	turns := b.count(".usage-turn")
	b.send("what did the command print?")
	b.waitTurns(turns + 1)
	b.waitIdle()
	if n := b.count(".item.user"); n != 2 {
		t.Fatalf("%d user bubbles after the followup", n)
	}
	if n := b.count(".item.assistant"); n < 2 {
		t.Fatalf("%d assistant replies after the followup", n)
	}
	b.noDuplicateIDs()

	// Upstream-only events (hooks, kept as ignorable) and an image (a text
	// placeholder) render without errors.
	for _, f := range []string{"examples--acp-agent--hook-cc-posttool-block--session.jsonl", "examples--acp-agent--read-image--session.jsonl"} {
		b.upload(filepath.Join(corpusDir, f), chromedp.WaitVisible(chromedp.ID("composer-input")))
		b.waitSynced()
		if b.count(".item.user") != 1 || b.count(".item.tool") == 0 {
			t.Fatalf("%s: %d user bubbles, %d tool cards", f, b.count(".item.user"), b.count(".item.tool"))
		}
		b.noDuplicateIDs()
	}
	if card := eval[string](b, `document.querySelector(".item.tool").textContent`); !strings.Contains(card, "[image: red.png, image/png]") {
		t.Fatalf("read_image card %q: want the image placeholder", card)
	}

	bad := filepath.Join(corpusDir, "apps--web--cordis-tool-round--session.jsonl")
	b.expectHTTPError("/sessions/import", 400) // the refusal is shown in place, with its reason
	b.upload(bad, chromedp.WaitVisible(chromedp.CSS(".flash")))
	if got := b.text(".flash"); !strings.Contains(got, "Import failed: line 8: seq gap") {
		t.Fatalf("flash %q", got)
	}
	b.shot("import-refused")
	if n := b.count(".session-row"); n != 3 {
		t.Fatalf("%d sessions listed, want the three imports", n)
	}
}
