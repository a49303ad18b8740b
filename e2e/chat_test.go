package e2e_test

import (
	"strings"
	"testing"
)

// recordStreaming notes, from now on, whether a block was ever shown
// streaming (so a test can tell a stream from a single final render).
func (b *browser) recordStreaming() {
	b.t.Helper()
	eval[bool](b, `(() => {
		window.sawStreaming = { text: false, reasoning: false };
		new MutationObserver(() => {
			if (document.querySelector(".item.assistant.streaming .md-tail")?.textContent) window.sawStreaming.text = true;
			if (document.querySelector(".item.reasoning.streaming .reasoning-text")?.textContent) window.sawStreaming.reasoning = true;
		}).observe(document.getElementById("transcript"), { subtree: true, childList: true, characterData: true });
		return true;
	})()`)
}

func TestFirstPromptStreamsReasoningAndMarkdown(t *testing.T) {
	t.Parallel()
	s := newServer(t, serverOpts{})
	b := s.newBrowser()
	b.login(adminName, adminPass)
	b.newSession("ask")
	if label := b.text("#model-label"); label != "Offline demo model" {
		t.Fatalf("model label %q", label)
	}
	b.recordStreaming()
	b.send("Hello <b>there</b>, explain yourself")
	b.waitTurns(1)
	b.shot("chat-first-answer")

	if got := eval[bool](b, `window.sawStreaming.text && window.sawStreaming.reasoning`); !got {
		t.Error("the answer did not stream: no partial text or reasoning was ever shown")
	}
	// The user's text is shown literally, never as markup.
	if got := b.text(".item.user .user-text"); got != "Hello <b>there</b>, explain yourself" {
		t.Errorf("user bubble %q", got)
	}
	if n := b.count(".item.user b"); n != 0 {
		t.Error("user text became markup")
	}
	// Reasoning is collapsed, with its text inside.
	if open := eval[bool](b, `document.querySelector(".item.reasoning").open`); open {
		t.Error("reasoning is expanded by default")
	}
	if r := eval[string](b, `document.querySelector(".item.reasoning .reasoning-text").textContent`); !strings.Contains(r, "No rule matches") {
		t.Errorf("reasoning text %q", r)
	}
	b.click(".item.reasoning > summary")
	if open := eval[bool](b, `document.querySelector(".item.reasoning").open`); !open {
		t.Error("reasoning does not expand")
	}
	// Markdown: strong text, a list, inline code.
	if got := b.text(".item.assistant .md-body strong"); got != "offline demo model" {
		t.Errorf("strong text %q", got)
	}
	if n := b.count(".item.assistant .md-body li code"); n < 5 {
		t.Errorf("%d inline code items in the list, want ≥ 5", n)
	}
	if n := b.count(".item.assistant.streaming"); n != 0 {
		t.Error("a block is still marked streaming after the turn")
	}
	// The sidebar lists the session with its title.
	b.waitJS("the sidebar title", `document.querySelector(".side-link.active .side-title")?.textContent.startsWith("Hello")`)
	b.noDuplicateIDs()
}

func TestRunShowsTerminalWithLiveOutput(t *testing.T) {
	t.Parallel()
	s := newServer(t, serverOpts{})
	b := s.newBrowser()
	b.login(adminName, adminPass)
	b.newSession("auto")
	b.send("run: echo hi; sleep 1; echo bye")
	// Live output: "hi" shows while the command still runs.
	b.waitJS("live output", `document.querySelector(".tool-bash[data-status=running] .term")?.textContent.includes("hi")`)
	if out := b.text(".tool-bash .term"); strings.Contains(out, "bye") {
		t.Errorf("the running card already shows the end: %q", out)
	}
	b.shot("bash-running")
	b.waitTurns(1)
	b.shot("bash-done")
	if out := b.text(".tool-bash .term"); !strings.Contains(out, "hi\nbye") {
		t.Errorf("terminal output %q", out)
	}
	if pill := b.text(".tool-bash .pill.exit"); pill != "exit 0" {
		t.Errorf("exit pill %q", pill)
	}
	if cmd := b.text(".tool-bash .cmd"); cmd != "echo hi; sleep 1; echo bye" {
		t.Errorf("command %q", cmd)
	}
	if dur := b.text(".tool-bash .dur"); !strings.HasSuffix(dur, " s") {
		t.Errorf("duration %q, want about a second", dur)
	}
	// The answer quotes the output in a highlighted code block with a copy
	// button.
	b.waitJS("the answer's code block", `document.querySelector(".item.assistant .code .copy")`)
	b.noDuplicateIDs()
}
