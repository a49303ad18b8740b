package driver_test

import (
	"testing"

	"harness/internal/driver"
	"harness/internal/session"
)

// Case 12: followup("hi") with a text reply.
func TestCase12FollowupTextReply(t *testing.T) {
	t.Parallel()
	h := newHarness(t, script(textReply("hello there")))
	h.followup("hi")
	h.idle()
	equal(t, "events", h.types(), []string{
		"agent/inbox/spliced", "turn/start", "agent/inbox/spliced", "step/start",
		"user/message", "user/message", "session/title", "request/header", "request/context",
		"assistant/chunk*", "assistant/message", "step/end", "turn/end",
	})
	if got := h.lastTurnEnd(); got.Kind != session.ReasonCompleted {
		t.Fatalf("turn end %+v", got)
	}
	equal(t, "derived", derivedRoles(h.agent.Log().DeriveMessages()),
		[]string{"user:text", "user:runtime-context", "assistant:text"})
	msgs := find[session.AssistantMessage](h, session.TypeAssistantMessage)
	if msgs[0].Usage == nil || msgs[0].Message.Text() != "hello there" {
		t.Fatalf("assistant message %+v", msgs[0])
	}
	st := h.live.statuses()
	if len(st) != 2 || st[0] != driver.StatusRunning || st[1] != driver.StatusIdle {
		t.Fatalf("statuses %v", st)
	}
}
