package e2e_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// queueTexts lists the queued messages the dock shows.
func (b *browser) queueTexts() []string {
	b.t.Helper()
	return eval[[]string](b, `[...document.querySelectorAll("#queue-list .queue-item .queue-text")].map(e => e.textContent)`)
}

// hasUserText reports whether a user bubble with text is in the transcript.
func (b *browser) hasUserText(text string) bool {
	b.t.Helper()
	return eval[bool](b, `[...document.querySelectorAll(".item.user .user-text")].some(e => e.textContent === `+jsString(text)+`)`)
}

// stopWithQueued streams a long answer, queues text, then stops the turn
// with stop (the button or Esc) and checks the paused queue: the agent is
// idle, the message still queued and shown paused with "Run next" and
// "Clear", and nothing starts by itself.
func (b *browser) stopWithQueued(text string, stop func()) {
	b.t.Helper()
	b.streamLong(3000)
	b.send(text)
	b.waitJS("the queued item", `document.querySelectorAll("#queue-list .queue-item").length === 1`)
	if eval[bool](b, `document.getElementById("queue-dock").classList.contains("paused")`) {
		b.t.Error("the queue shows paused while the agent runs")
	}
	stops := b.count(".notice-aborted")
	stop()
	b.waitJS("the stop notice", fmt.Sprintf(`document.querySelectorAll(".notice-aborted").length > %d`, stops))
	b.waitIdle()
	b.waitJS("the paused queue", `document.getElementById("queue-dock").classList.contains("paused")`)
	b.visible("#queue-paused")
	b.visible("#queue-controls [data-action=queue-run]")
	b.visible("#queue-controls [data-action=queue-clear]")
	// Proves a negative: nothing starts by itself within 700 ms.
	time.Sleep(700 * time.Millisecond)
	if st := eval[string](b, `document.getElementById("agent-status").dataset.status`); st != "idle" {
		b.t.Fatalf("after Stop the agent is %s", st)
	}
	if q := b.queueTexts(); len(q) != 1 || q[0] != text {
		b.t.Fatalf("queue after Stop %q", q)
	}
	if b.hasUserText(text) {
		b.t.Fatalf("%q ran after Stop", text)
	}
}

// Stop (the button, then Esc) leaves the agent idle with the queued
// message still queued and visibly paused; "Run next" runs it; "Clear"
// empties the queue.
func TestStopPausesQueue(t *testing.T) {
	t.Parallel()
	s := newServer(t, serverOpts{})
	b := s.newBrowser()
	b.login(adminName, adminPass)
	b.newSession("ask")

	b.stopWithQueued("queued before the stop", func() { b.click("#stop-btn") })
	b.shot("queue-paused")
	b.click("#queue-controls [data-action=queue-run]")
	b.waitJS("the queued message to run", `[...document.querySelectorAll(".item.user .user-text")].some(e => e.textContent === "queued before the stop")`)
	b.waitTurns(2)
	b.waitIdle()
	b.waitJS("the queue to empty", `document.getElementById("queue-dock").classList.contains("hidden")`)
	if eval[bool](b, `document.getElementById("queue-dock").classList.contains("paused")`) {
		t.Error("an empty queue shows paused")
	}

	// Esc in the composer stops the running turn the same way.
	b.stopWithQueued("cleared after the stop", func() {
		b.do(chromedp.Focus(chromedp.ID("composer-input")), pressEscape())
	})
	b.click("#queue-controls [data-action=queue-clear]")
	b.waitJS("the queue to empty", `document.getElementById("queue-dock").classList.contains("hidden") && document.querySelectorAll("#queue-list .queue-item").length === 0`)
	time.Sleep(300 * time.Millisecond) // proves a negative: the cleared message does not run
	if b.hasUserText("cleared after the stop") {
		t.Error("the cleared message ran")
	}
	if st := eval[string](b, `document.getElementById("agent-status").dataset.status`); st != "idle" {
		t.Errorf("after Clear the agent is %s", st)
	}
	b.noDuplicateIDs()
}
