package e2e_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

func TestReloadMidStreamContinues(t *testing.T) {
	t.Parallel()
	s := newServer(t, serverOpts{})
	b := s.newBrowser()
	b.login(adminName, adminPass)
	b.newSession("ask")
	const words = 1500
	b.streamLong(words)
	b.do(chromedp.Reload())
	b.waitSynced()
	// The page comes back mid-stream and keeps streaming.
	if n := b.count(".item.assistant.streaming"); n != 1 {
		t.Fatalf("%d streaming blocks after the reload, want 1 (the stream was too short?)", n)
	}
	b.recordStreaming()
	b.waitIdle()
	b.waitTurns(1)
	if !eval[bool](b, `window.sawStreaming.text`) {
		t.Error("the stream did not continue live after the reload")
	}
	if n := b.count(".item.assistant"); n != 1 {
		t.Errorf("%d assistant blocks, want 1", n)
	}
	if got := len(strings.Fields(b.text(".item.assistant .md-body"))); got != words {
		t.Errorf("the answer has %d words, want %d (lost or doubled deltas)", got, words)
	}
	b.noDuplicateIDs()
}

// TestTwoTabsStayIdentical: two tabs on one session see the same
// transcript live, and a reload shows it the same way.
func TestTwoTabsStayIdentical(t *testing.T) {
	t.Parallel()
	s := newServer(t, serverOpts{})
	a := s.newBrowser()
	a.login(adminName, adminPass)
	id := a.newSession("auto")
	b := a.tab()
	b.open("/sessions/" + id)
	b.waitSynced()

	a.send("run: echo from tab one")
	b.waitJS("tab two to see the terminal", `document.querySelector(".tool-bash .term")?.textContent.includes("from tab one")`)
	a.waitTurns(1)
	b.waitTurns(1)
	b.send("todo: write; test; ship")
	a.waitTurns(2)
	b.waitTurns(2)
	a.waitIdle()
	b.waitIdle()

	html := `document.getElementById("transcript").innerHTML`
	ha, hb := eval[string](a, html), eval[string](b, html)
	if ha != hb {
		t.Errorf("the tabs differ:\n%s", diffAt(ha, hb))
	}
	if dock := b.text("#todo-dock"); !strings.Contains(dock, "ship") {
		t.Errorf("todo dock %q", dock)
	}
	// A reload renders the same transcript from the log.
	b.do(chromedp.Reload())
	b.waitSynced()
	if hr := eval[string](b, html); normalizeWS(hr) != normalizeWS(ha) {
		t.Errorf("the reloaded tab differs from the live one:\n%s", diffAt(normalizeWS(ha), normalizeWS(hr)))
	}
}

func normalizeWS(s string) string { return strings.Join(strings.Fields(s), " ") }

func diffAt(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo := max(0, i-200)
	return "…" + a[lo:min(len(a), i+200)] + "…\nvs\n…" + b[lo:min(len(b), i+200)] + "…"
}

func TestViewerLinkIsLiveAndReadOnly(t *testing.T) {
	t.Parallel()
	s := newServer(t, serverOpts{})
	owner := s.newBrowser()
	owner.login(adminName, adminPass)
	id := owner.newSession("auto")
	owner.send("hello first")
	owner.waitTurns(1)

	owner.open("/sessions/" + id + "/sharing")
	owner.clickNav("#create-link")
	owner.visible("#new-link")
	link := eval[string](owner, `document.getElementById("new-link").value`)
	if !strings.Contains(link, "/s/") {
		t.Fatalf("link %q", link)
	}
	path := link[strings.Index(link, "/s/"):]

	viewer := s.newBrowser() // no account
	viewer.open(path)
	viewer.waitSynced()
	if n := viewer.count("#composer, #composer-input, .chat-menu"); n != 0 {
		t.Error("the viewer has a composer or session actions")
	}
	viewer.visible("#readonly")
	if got := viewer.text(".item.user .user-text"); got != "hello first" {
		t.Errorf("viewer sees %q", got)
	}

	owner.open("/sessions/" + id)
	owner.waitSynced()
	owner.send("run: echo live for viewers")
	viewer.waitJS("the live update", `document.querySelector(".tool-bash .term")?.textContent.includes("live for viewers")`)
	viewer.waitTurns(2)
	viewer.shot("viewer")
	// The viewer's bubbles show who wrote them.
	if a := viewer.text(".item.user .author"); a != adminName {
		t.Errorf("author shown to the viewer %q", a)
	}
}

func TestOtherUserCannotOpenSession(t *testing.T) {
	t.Parallel()
	s := newServer(t, serverOpts{})
	owner := s.newBrowser()
	owner.login(adminName, adminPass)
	id := owner.newSession("ask")

	bob := s.newBrowser()
	bob.login(bobName, bobPass)
	bob.expectHTTPError("/sessions/"+id, 404)
	if st := bob.status("/sessions/" + id); st != 404 {
		t.Errorf("status %d, want 404", st)
	}
	if h := bob.text("h1"); h != "Session not found" {
		t.Errorf("heading %q", h)
	}
	if msg := bob.text(".sub"); !strings.Contains(msg, "do not have access") {
		t.Errorf("message %q", msg)
	}
	bob.shot("no-access")
	// Nor may bob open the admin pages.
	bob.expectHTTPError("/admin/users", 403)
	if st := bob.status("/admin/users"); st != 403 {
		t.Errorf("admin page status %d, want 403", st)
	}
	if h := bob.text("h1"); h != "Forbidden" {
		t.Errorf("admin page heading %q", h)
	}
	// Bob's sidebar does not list the session.
	bob.open("/")
	if n := bob.count(`.side-link[data-session="` + id + `"]`); n != 0 {
		t.Error("bob's sidebar lists the owner's session")
	}
}

// TestCollaboratorAuthorsShown: in a shared session each bubble names its
// author for the other people.
func TestCollaboratorAuthorsShown(t *testing.T) {
	t.Parallel()
	s := newServer(t, serverOpts{})
	owner := s.newBrowser()
	owner.login(adminName, adminPass)
	id := owner.newSession("ask")
	owner.open("/sessions/" + id + "/sharing")
	owner.do(
		chromedp.SetValue(chromedp.CSS(`input[name=name]`), bobName),
		chromedp.SetValue(chromedp.CSS(`select[name=role]`), "collaborator"),
	)
	owner.clickNav("#add-member")
	owner.waitJS("the member", `document.getElementById("members").innerText.includes("bob")`)
	owner.open("/sessions/" + id)
	owner.waitSynced()

	bob := s.newBrowser()
	bob.login(bobName, bobPass)
	bob.open("/sessions/" + id)
	bob.waitSynced()
	bob.send("hello from bob")
	owner.waitTurns(1)
	if a := owner.text(".item.user .author"); a != bobName {
		t.Errorf("the owner sees author %q, want bob", a)
	}
	bob.waitTurns(1)
	if n := bob.count(".item.user .author"); n != 0 {
		t.Error("bob sees his own name on his bubble")
	}
}

// TestReconnectMidStreamResumes: the socket drops while an answer streams;
// the page reconnects by itself, resumes after the last seq it applied and
// ends with the whole answer, once.
func TestReconnectMidStreamResumes(t *testing.T) {
	t.Parallel()
	s := newServer(t, serverOpts{})
	b := s.newBrowser()
	b.login(adminName, adminPass)
	b.newSession("ask")
	const words = 1500
	b.streamLong(words)
	for i := range 3 {
		eval[bool](b, `(window.harness.socket.ws.close(4000, "test drop"), true)`)
		b.waitJS("the socket to come back", fmt.Sprintf(`window.harness.socket.open && window.harness.socket.connections === %d`, i+2))
	}
	b.waitIdle()
	b.waitTurns(1)
	if got := len(strings.Fields(b.text(".item.assistant .md-body"))); got != words {
		t.Errorf("the answer has %d words after reconnects, want %d", got, words)
	}
	if !eval[bool](b, `document.getElementById("connection").hidden`) {
		t.Error("the reconnecting badge stayed")
	}
	b.noDuplicateIDs()
}

// TestLostAnswerResendsUnderTheSameKey: the socket drops right after a
// message is sent, so its answer is lost; the page sends it again on the
// new socket under the same request id (its idempotency key) and the
// server stores it once: one bubble, one turn, the composer clear.
func TestLostAnswerResendsUnderTheSameKey(t *testing.T) {
	t.Parallel()
	s := newServer(t, serverOpts{})
	b := s.newBrowser()
	b.login(adminName, adminPass)
	b.newSession("ask")
	// The current socket closes as soon as it has sent a followup; the
	// socket the page reconnects with is a new, unpatched one.
	eval[bool](b, `(() => {
		const s = window.harness.socket, ws = s.ws, send = ws.send.bind(ws);
		window.sentIds = [];
		ws.send = (data) => {
			send(data);
			const f = JSON.parse(data);
			if (f.op === "followup") { window.sentIds.push(f.id); ws.close(4000, "test drop"); }
		};
		const request = s.request.bind(s);
		s.request = (op, fields, id) => {
			if (op === "followup" && s.ws !== ws) window.sentIds.push(id);
			return request(op, fields, id);
		};
		return true;
	})()`)
	b.send("say this once")
	b.waitJS("the socket to come back", `window.harness.socket.open && window.harness.socket.connections === 2`)
	b.waitIdle()
	b.waitTurns(1)
	ids := eval[[]string](b, `window.sentIds`)
	if len(ids) < 2 || ids[0] != ids[len(ids)-1] {
		t.Fatalf("request ids sent %v: want the lost send repeated under its first id", ids)
	}
	if n := b.count(".item.user"); n != 1 {
		t.Fatalf("%d user messages after the resend, want 1", n)
	}
	if got := b.text(".item.user .user-text"); got != "say this once" {
		t.Fatalf("user message %q", got)
	}
	b.waitJS("the composer's hint to clear once the resend is answered", `document.getElementById("composer-hint").textContent === ""`)
	b.open(eval[string](b, `location.pathname`))
	b.waitSynced()
	if n := b.count(".item.user"); n != 1 {
		t.Fatalf("%d user messages after a reload, want 1", n)
	}
}
