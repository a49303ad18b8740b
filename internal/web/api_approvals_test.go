package web_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"harness/client"
)

// Approvals over REST: the decision values, allow-session with its preview,
// and revoking the tool with DELETE.
func TestAPIApproveDecisionsAndRevoke(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	ctx := t.Context()
	c := e.alice
	s, err := c.CreateSession(ctx, client.NewSession{Title: "approvals", Mode: "ask"})
	if err != nil {
		t.Fatal(err)
	}
	if s.AllowedTools == nil || len(s.AllowedTools) != 0 {
		t.Fatalf("a new session's allowedTools %#v, want []", s.AllowedTools)
	}
	if _, err := c.SendMessage(ctx, s.ID, "write: notes.txt\nfirst line", "followup"); err != nil {
		t.Fatal(err)
	}
	a := waitInteraction(t, c, s.ID)
	if a.Kind != "approval" || a.ToolName != "write" || a.Preview == nil || a.Preview.Kind != "diff" ||
		a.Preview.Path != "notes.txt" || !a.Preview.Created || !strings.Contains(a.Preview.Diff, "+first line") {
		t.Fatalf("interaction %+v preview %+v", a, a.Preview)
	}
	wantErr(t, "unknown decision", c.Decide(ctx, s.ID, a.ID, "sometimes"), http.StatusBadRequest, "bad_request")
	wantErr(t, "missing decision", c.Decide(ctx, s.ID, a.ID, ""), http.StatusBadRequest, "bad_request")
	wantErr(t, "stranger decides", e.bob.ApproveSession(ctx, s.ID, a.ID), http.StatusNotFound, "not_found")
	if err := c.ApproveSession(ctx, s.ID, a.ID); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "decided twice", c.Decide(ctx, s.ID, a.ID, client.DecisionDeny), http.StatusConflict, "not_pending")
	e.idle(t, s.ID)
	got, err := c.GetSession(ctx, s.ID)
	if err != nil || !slices.Equal(got.AllowedTools, []string{"write"}) {
		t.Fatalf("allowedTools %v, %v", got.AllowedTools, err)
	}

	wantErr(t, "stranger revokes", e.bob.RevokeTool(ctx, s.ID, "write"), http.StatusNotFound, "not_found")
	if err := c.RevokeTool(ctx, s.ID, "write"); err != nil {
		t.Fatal(err)
	}
	if err := c.RevokeTool(ctx, s.ID, "bash"); err != nil {
		t.Fatalf("revoking a tool that is not allowed: %v", err)
	}
	if got, _ = c.GetSession(ctx, s.ID); len(got.AllowedTools) != 0 {
		t.Fatalf("allowedTools after revoke %v", got.AllowedTools)
	}
	events, err := c.Events(ctx, s.ID, -1, 0)
	if err != nil {
		t.Fatal(err)
	}
	var decided, revoked string
	for _, ev := range events.Events {
		switch ev.Type {
		case "approval/decided":
			decided = string(ev.Data)
		case "approval/revoked":
			revoked = string(ev.Data)
		}
	}
	if !strings.Contains(decided, `"outcome":"allowed-session","tool":"write"`) || !strings.Contains(revoked, `"tool":"write"`) {
		t.Fatalf("decided %s revoked %s", decided, revoked)
	}
}
