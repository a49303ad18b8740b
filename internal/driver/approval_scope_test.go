package driver_test

import (
	"slices"
	"strings"
	"testing"

	"harness/internal/driver"
	"harness/internal/session"
)

// waitAsked waits for the n-th approval/asked (1-based) and returns it.
func waitAsked(h *harness, n int) session.ApprovalAsked {
	h.t.Helper()
	h.waitEvent(func(ev session.Event) bool {
		return ev.Type == session.TypeApprovalAsked && len(find[session.ApprovalAsked](h, session.TypeApprovalAsked)) >= n
	})
	return find[session.ApprovalAsked](h, session.TypeApprovalAsked)[n-1]
}

// "Allow for this session": the call runs, the decision names the tool; a
// later call of that tool runs with no prompt; another tool still asks;
// after a revocation the tool asks again.
func TestAllowForSession(t *testing.T) {
	t.Parallel()
	h := newHarness(t, script(
		toolReply(call("c1", "write", map[string]any{"file_path": "a.txt", "content": "one\n"})), textReply("ok"),
		toolReply(call("c2", "write", map[string]any{"file_path": "b.txt", "content": "two\n"})), textReply("ok"),
		toolReply(call("c3", "bash", map[string]any{"command": "touch ran", "description": "touch a file"})), textReply("ok"),
		toolReply(call("c4", "write", map[string]any{"file_path": "c.txt", "content": "three\n"})), textReply("ok"),
	))
	bo := &session.Actor{UserID: "u2", Name: "Bo"}

	// Turn 1: asked with a preview; allowed for the session.
	h.followup("write a")
	asked := waitAsked(h, 1)
	if asked.Preview == nil || asked.Preview.Kind != session.PreviewDiff || asked.Preview.Path != "a.txt" || !asked.Preview.Created ||
		!strings.Contains(asked.Preview.Diff, "+one") {
		t.Fatalf("asked preview %+v", asked.Preview)
	}
	pending := h.agent.PendingInteractions()
	if len(pending) != 1 || pending[0].Preview == nil || pending[0].Preview.Diff != asked.Preview.Diff {
		t.Fatalf("pending interaction lacks the preview: %+v", pending)
	}
	if err := h.agent.Decide(h.ctx, asked.ID, session.ApprovalCancelled, bo); err == nil {
		t.Fatal("a person decided \"cancelled\"")
	}
	if err := h.agent.Decide(h.ctx, asked.ID, session.ApprovalAllowedSession, bo); err != nil {
		t.Fatal(err)
	}
	h.idle()
	if !fileExists(h.ws, "a.txt") {
		t.Fatalf("allowed-session did not run the call\n%s", h.dump())
	}
	d := find[session.ApprovalDecided](h, session.TypeApprovalDecided)
	if len(d) != 1 || d[0].Outcome != session.ApprovalAllowedSession || d[0].Tool != "write" || d[0].By == nil || d[0].By.UserID != "u2" {
		t.Fatalf("decided %+v", d)
	}
	if got := h.agent.AllowedTools(); !slices.Equal(got, []string{"write"}) {
		t.Fatalf("allowed %v", got)
	}
	if l := h.live.kinds(driver.LiveAllowed); len(l) != 1 || !slices.Equal(l[0].Tools, []string{"write"}) || l[0].Session != "s1" {
		t.Fatalf("allowed notifications %+v", l)
	}

	// Turn 2: the same tool runs without a prompt (and logs no approval).
	h.followup("write b")
	h.idle()
	if !fileExists(h.ws, "b.txt") {
		t.Fatalf("the allowed tool did not run\n%s", h.dump())
	}
	if n := len(find[session.ApprovalAsked](h, session.TypeApprovalAsked)); n != 1 {
		t.Fatalf("%d approvals asked, want still 1", n)
	}

	// Turn 3: another tool still asks (and shows its command).
	h.followup("run")
	asked = waitAsked(h, 2)
	if asked.ToolName != "bash" || asked.Preview == nil || asked.Preview.Kind != session.PreviewCommand || asked.Preview.Command != "touch ran" || asked.Preview.Description != "touch a file" {
		t.Fatalf("bash asked %+v preview %+v", asked, asked.Preview)
	}
	if err := h.agent.Decide(h.ctx, asked.ID, session.ApprovalRejected, bo); err != nil {
		t.Fatal(err)
	}
	h.idle()
	if fileExists(h.ws, "ran") {
		t.Fatal("the rejected bash call ran")
	}

	// Revoke: logged once with its actor; revoking again logs nothing.
	if err := h.agent.RevokeTool(h.ctx, "write", bo); err != nil {
		t.Fatal(err)
	}
	if err := h.agent.RevokeTool(h.ctx, "write", bo); err != nil {
		t.Fatal(err)
	}
	rv := find[session.ApprovalRevoked](h, session.TypeApprovalRevoked)
	if len(rv) != 1 || rv[0].Tool != "write" || rv[0].By.UserID != "u2" || h.agent.AllowedTools() != nil {
		t.Fatalf("revoked %+v, allowed %v", rv, h.agent.AllowedTools())
	}
	if l := h.live.kinds(driver.LiveAllowed); len(l) != 2 || len(l[1].Tools) != 0 {
		t.Fatalf("allowed notifications %+v", l)
	}

	// Turn 4: write asks again.
	h.followup("write c")
	asked = waitAsked(h, 3)
	if asked.ToolName != "write" {
		t.Fatalf("asked %+v", asked)
	}
	if err := h.agent.Approve(h.ctx, asked.ID, true, bo); err != nil {
		t.Fatal(err)
	}
	h.idle()
	if !fileExists(h.ws, "c.txt") || h.agent.AllowedTools() != nil {
		t.Fatalf("allowed once: file %v, allowed %v", fileExists(h.ws, "c.txt"), h.agent.AllowedTools())
	}
}

// The allowed set is folded from the stored log: it survives a restart,
// and the permission mode still comes first (read-only denies an allowed
// tool; nothing is asked).
func TestAllowForSessionSurvivesRestart(t *testing.T) {
	t.Parallel()
	h := newHarness(t, script(
		toolReply(call("c1", "write", map[string]any{"file_path": "a.txt", "content": "one\n"})), textReply("ok"),
		toolReply(call("c2", "write", map[string]any{"file_path": "b.txt", "content": "two\n"})), textReply("ok"),
		toolReply(call("c3", "write", map[string]any{"file_path": "c.txt", "content": "three\n"})), textReply("ok"),
	))
	h.followup("write a")
	asked := waitAsked(h, 1)
	if err := h.agent.Decide(h.ctx, asked.ID, session.ApprovalAllowedSession, nil); err != nil {
		t.Fatal(err)
	}
	h.idle()

	h.restart()
	a, err := h.mgr.Get(h.ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	h.agent = a
	if got := a.AllowedTools(); !slices.Equal(got, []string{"write"}) {
		t.Fatalf("after restart allowed %v", got)
	}
	h.followup("write b")
	h.idle()
	if !fileExists(h.ws, "b.txt") || len(find[session.ApprovalAsked](h, session.TypeApprovalAsked)) != 1 {
		t.Fatalf("after restart the allowed tool asked or did not run\n%s", h.dump())
	}

	if err := a.SetMode(h.ctx, session.ModeReadOnly, nil); err != nil {
		t.Fatal(err)
	}
	h.followup("write c")
	h.idle()
	if fileExists(h.ws, "c.txt") || len(find[session.ApprovalAsked](h, session.TypeApprovalAsked)) != 1 {
		t.Fatalf("read-only mode let an allowed tool run (or asked)\n%s", h.dump())
	}
	if tm := lastToolMessage(t, h); !strings.Contains(tm.Text(), "read-only") {
		t.Fatalf("model saw %q", tm.Text())
	}
	// Still allowed: only the mode refused it.
	if got := a.AllowedTools(); !slices.Equal(got, []string{"write"}) {
		t.Fatalf("allowed %v", got)
	}
}
