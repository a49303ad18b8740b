package e2e_test

import (
	"strings"
	"testing"
)

// The task tool in Chromium: the demo model's call rule starts a
// subagent; its card is open while the child runs and shows the child's
// transcript streaming, nested (the child's own items, ids of their own);
// once done the card collapses and holds the result, and the turn's usage
// row counts the child's request (two of the parent, one of the child). After a reload, and on a share link's
// page, opening the card brings the child's transcript back.
func TestSubagentNestedTranscript(t *testing.T) {
	t.Parallel()
	s := newServer(t, serverOpts{})
	b := s.newBrowser()
	b.login(adminName, adminPass)
	id := b.newSession("ask")

	b.send(`call: task {"description": "Count slowly", "prompt": "long: 400"}`)
	card := `.item.tool.tool-task`
	nested := card + ` .subagent-transcript`
	b.waitJS("the running card to be open with the child's transcript", `(() => {
		const c = document.querySelector(".item.tool.tool-task");
		return c?.dataset.status === "running" && c.querySelector("details.subagent")?.open &&
			c.querySelector(".subagent-transcript .item.assistant") !== null; })()`)
	if who := b.text(nested + ` .item.user .author`); !strings.Contains(who, "parent agent") {
		t.Errorf("the child's prompt bubble says %q", who)
	}
	if got := b.text(nested + ` .item.user .user-text`); got != "long: 400" {
		t.Errorf("the child's prompt %q", got)
	}
	// Live: the child's answer grows while the card is open.
	b.waitJS("the child's text to stream", `(document.querySelector(".item.tool.tool-task .subagent-transcript .item.assistant")?.textContent.length ?? 0) > 20`)
	b.shot("subagent-running")

	// The parent's own usage row (the child's rows are nested in the card).
	b.waitJS("the parent's turn to end", `document.querySelector("#transcript > #ut-1") !== null`)
	b.waitJS("the finished card to collapse", `(() => { const c = document.querySelector(".item.tool.tool-task");
		return c?.dataset.status === "ok" && !c.querySelector("details.subagent").open; })()`)
	if got := b.text(card + ` .path`); got != "Count slowly" {
		t.Errorf("card title %q", got)
	}
	if res := eval[string](b, `document.querySelector(".item.tool.tool-task .subagent-answer .tool-out")?.textContent ?? ""`); !strings.Contains(res, "lorem ipsum") {
		t.Errorf("card result %q", res)
	}
	// The items moved into the finished card; the ids never meet the
	// parent's (both logs have turn 1, step 1).
	if n := b.count(nested + ` .item.assistant`); n < 1 {
		t.Errorf("%d nested assistant items after the card was replaced", n)
	}
	b.noDuplicateIDs()
	if u := eval[string](b, `document.querySelector("#transcript > #ut-1")?.textContent ?? ""`); !strings.Contains(u, "3 requests") {
		t.Errorf("the usage row %q does not count the child's requests; rows: %v", u, eval[[]string](b, `[...document.querySelectorAll(".item.usage")].map(e => e.id + " " + e.textContent)`))
	}
	child := eval[string](b, `document.querySelector(".item.tool.tool-task .subagent-transcript").dataset.child`)
	if child == "" || child == id {
		t.Fatalf("child id %q", child)
	}

	// After a reload the card is collapsed; opening it loads the child.
	b.open("/sessions/" + id)
	b.waitSynced()
	if b.count(nested+` .item`) != 0 {
		t.Error("a collapsed finished card loaded its transcript")
	}
	b.click(card + ` summary`)
	b.waitJS("the child's transcript after a reload", `document.querySelectorAll(".item.tool.tool-task .subagent-transcript .item.assistant").length >= 1 &&
		document.querySelector(".item.tool.tool-task .subagent-transcript").dataset.state === "synced"`)
	if got := b.text(nested + ` .item.user .user-text`); got != "long: 400" {
		t.Errorf("after a reload the child's prompt %q", got)
	}
	b.noDuplicateIDs()
	b.shot("subagent-reloaded")

	// The child's own page is read-only (no composer).
	b.open("/sessions/" + child)
	b.waitSynced()
	if n := b.count("#composer-input"); n != 0 {
		t.Error("the child's page has a composer")
	}

	// A share link of the parent reads the child's transcript too (no
	// link to the child's page, which needs an account).
	ctx := t.Context()
	u, err := s.app.Auth.GetUser(ctx, adminName)
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := s.app.Auth.CreateShareLink(ctx, id, u.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	guest := s.newBrowser()
	guest.open("/s/" + tok)
	guest.waitSynced()
	guest.click(card + ` summary`)
	guest.waitJS("the child's transcript on the share page", `document.querySelectorAll(".item.tool.tool-task .subagent-transcript .item.assistant").length >= 1`)
	if n := guest.count(card + ` .subagent-link`); n != 0 {
		t.Error("the share page links to the child's page")
	}

	// Another user sees none of it.
	bob := s.newBrowser()
	bob.login(bobName, bobPass)
	bob.expectHTTPError("/sessions/"+child, 404)
	if st := bob.status("/sessions/" + child); st != 404 {
		t.Errorf("a stranger opens the child's page: %d", st)
	}
}
