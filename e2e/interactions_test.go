package e2e_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

func TestAskUserAnsweredInTheUI(t *testing.T) {
	t.Parallel()
	s := newServer(t, serverOpts{})
	b := s.newBrowser()
	b.login(adminName, adminPass)
	b.newSession("ask")
	b.send("ask: proceed?")
	b.visible(".tk-question")
	// The question takes over the composer.
	if vis := eval[bool](b, `getComputedStyle(document.getElementById("composer")).display !== "none"`); vis {
		t.Error("the composer is still shown while a question is pending")
	}
	if q := b.text(".tk-question legend"); q != "proceed?" {
		t.Errorf("question %q", q)
	}
	b.shot("question")
	b.click(`.tk-question input[value="yes"]`)
	b.click(`.tk-question button[type=submit]`)
	b.waitTurns(1)
	if n := b.count(".tk-panel"); n != 0 {
		t.Error("the question panel stayed")
	}
	b.visible("#composer-input")
	if got := b.text(".item.assistant .md-body strong"); got != "yes" {
		t.Errorf("the model saw %q, want yes", got)
	}
	if st := b.text(".item.question .prompt-state"); !strings.Contains(st, "answered: yes") {
		t.Errorf("question row state %q", st)
	}
}

func TestApprovalAllowAndDeny(t *testing.T) {
	t.Parallel()
	s := newServer(t, serverOpts{})
	b := s.newBrowser()
	b.login(adminName, adminPass)
	b.newSession("ask")

	b.send("run: echo approved")
	b.visible(".tk-approval")
	if d := b.text(".tk-approval .tk-detail"); d != "echo approved" {
		t.Errorf("the approval shows %q, want the command", d)
	}
	b.shot("approval")
	b.click(`.tk-approval button[data-decision=allow]`)
	b.waitTurns(1)
	if out := b.text(".tool-bash .term"); !strings.Contains(out, "approved") {
		t.Errorf("allowed command output %q", out)
	}
	if st := b.text(".item.approval .prompt-state"); !strings.Contains(st, "allowed by admin") {
		t.Errorf("approval row %q", st)
	}

	b.send("run: echo never")
	b.visible(".tk-approval")
	b.click(`.tk-approval button[data-decision=deny]`)
	b.waitTurns(2)
	if n := b.count(".tk-panel"); n != 0 {
		t.Error("a panel stayed after the decision")
	}
	last := `[...document.querySelectorAll(".tool-bash")].at(-1)`
	if st := eval[string](b, last+`.dataset.status`); st != "error" {
		t.Errorf("denied call status %q, want error", st)
	}
	if out := eval[string](b, last+`.innerText`); strings.Contains(out, "\nnever") {
		t.Errorf("the denied command ran: %q", out)
	}
	if st := eval[string](b, `[...document.querySelectorAll(".item.approval .prompt-state")].at(-1).innerText`); !strings.Contains(st, "denied") {
		t.Errorf("approval row %q", st)
	}
}

// streamLong starts a long answer and waits until part of it shows.
func (b *browser) streamLong(words int) {
	b.t.Helper()
	b.send("long: " + strconv.Itoa(words))
	b.waitJS("the stream to start", `(document.querySelector(".item.assistant.streaming")?.innerText.length ?? 0) > 20`)
}

func TestQueueEditRemove(t *testing.T) {
	t.Parallel()
	s := newServer(t, serverOpts{})
	b := s.newBrowser()
	b.login(adminName, adminPass)
	b.newSession("ask")
	b.streamLong(3000)
	if send := b.text("#send-btn"); send != "Queue" {
		t.Errorf("while running the send button says %q", send)
	}
	b.send("first queued")
	b.send("second queued")
	b.waitJS("two queued items", `document.querySelectorAll("#queue-list .queue-item").length === 2`)
	b.shot("queue")

	// Edit the first.
	b.click(`#queue-list .queue-item:nth-child(1) [data-action=queue-edit]`)
	b.do(chromedp.SetValue(chromedp.CSS("#queue-list .queue-edit"), "edited first"))
	b.click(`#queue-list [data-action=queue-save]`)
	b.waitJS("the edit", `document.querySelector("#queue-list .queue-item:nth-child(1) .queue-text")?.textContent === "edited first"`)
	// Remove the second.
	b.click(`#queue-list .queue-item:nth-child(2) [data-action=queue-remove]`)
	b.waitJS("one queued item", `document.querySelectorAll("#queue-list .queue-item").length === 1`)
	if q := b.text("#queue-list"); !strings.Contains(q, "edited first") || strings.Contains(q, "second") {
		t.Errorf("queue %q", q)
	}
	// Stop the long answer; the queue stays, paused, and runs on "Run next".
	b.click("#stop-btn")
	b.waitJS("the paused queue", `document.getElementById("queue-dock").classList.contains("paused")`)
	b.click("#queue-controls [data-action=queue-run]")
	b.waitJS("the queued message to run", `[...document.querySelectorAll(".item.user .user-text")].some(e => e.textContent === "edited first")`)
	b.waitTurns(2)
	b.waitIdle()
	for _, gone := range []string{"first queued", "second queued"} {
		if eval[bool](b, `[...document.querySelectorAll(".item.user .user-text")].some(e => e.textContent === "`+gone+`")`) {
			t.Errorf("%q reached the agent", gone)
		}
	}
	if b.count("#queue-list .queue-item") != 0 || !eval[bool](b, `document.getElementById("queue-dock").classList.contains("hidden")`) {
		t.Error("the queue dock did not empty")
	}
}

func TestSteer(t *testing.T) {
	t.Parallel()
	s := newServer(t, serverOpts{})
	b := s.newBrowser()
	b.login(adminName, adminPass)
	b.newSession("ask")
	b.streamLong(1500)
	// Ctrl+Enter steers into the running turn.
	b.do(
		chromedp.SetValue(chromedp.ID("composer-input"), "steer this way"),
		chromedp.Focus(chromedp.ID("composer-input")),
		pressEnter(2),
	)
	b.waitJS("the steered message in the turn", `[...document.querySelectorAll(".item.user .user-text")].some(e => e.textContent === "steer this way")`)
	b.waitIdle()
	b.waitTurns(1)
	// One turn: the steer entered the running turn, not a new one.
	if n := b.count(".usage-turn"); n != 1 {
		t.Errorf("%d turns, want 1 (steering enters the running turn)", n)
	}
	if n := b.count(".item.user"); n != 2 {
		t.Errorf("%d user bubbles, want 2", n)
	}
	// The model answered the steer after the long text.
	order := eval[string](b, `[...document.querySelectorAll("#transcript > .item")].map(e => e.classList.contains("user") ? "U" : e.classList.contains("assistant") ? "A" : "").join("")`)
	if !strings.HasSuffix(order, "UAUA") {
		t.Errorf("transcript order %q, want the steer between the long answer and its reply", order)
	}

	// "Steer now" on a queued message.
	b.streamLong(1500)
	b.send("queued then steered")
	b.waitJS("the queued item", `document.querySelector("#queue-list .queue-item")`)
	b.click(`#queue-list [data-action=queue-steer]`)
	b.waitJS("the steered item", `document.querySelector("#queue-list .queue-item[data-kind=steer]") || [...document.querySelectorAll(".item.user .user-text")].some(e => e.textContent === "queued then steered")`)
	b.waitJS("the steered message in the turn", `[...document.querySelectorAll(".item.user .user-text")].some(e => e.textContent === "queued then steered")`)
	b.waitTurns(2)
	b.waitIdle()
	if n := b.count(".usage-turn"); n != 2 {
		t.Errorf("%d turns, want 2", n)
	}
}

func TestStopKeepsPartialText(t *testing.T) {
	t.Parallel()
	s := newServer(t, serverOpts{})
	b := s.newBrowser()
	b.login(adminName, adminPass)
	b.newSession("ask")
	b.streamLong(5000)
	b.click("#stop-btn")
	b.waitJS("the stop notice", `document.querySelector(".notice-aborted")`)
	b.waitIdle()
	b.shot("stopped")
	text := b.text(".item.assistant .md-body")
	words := len(strings.Fields(text))
	if words < 3 || words >= 5000 {
		t.Errorf("partial answer has %d words, want some but not all", words)
	}
	if n := b.text(".notice-partial"); !strings.Contains(n, "partial answer") {
		t.Errorf("interrupted notice %q", n)
	}
	if n := b.text(".notice-aborted"); n != "Stopped by the user." {
		t.Errorf("stop notice %q", n)
	}
	// A reload shows the same partial text.
	b.do(chromedp.Reload())
	b.waitSynced()
	if again := b.text(".item.assistant .md-body"); again != text {
		t.Errorf("after reload the partial text differs:\n%q\nvs\n%q", again, text)
	}
}
