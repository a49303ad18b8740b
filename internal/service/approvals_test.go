package service_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"harness/internal/driver"
	"harness/internal/service"
	"harness/internal/session"
	"harness/internal/testkit/poll"
)

// pendingApproval waits for the session's pending approval.
func (e *env) pendingApproval(id string) driver.Interaction {
	e.t.Helper()
	ag, ok := e.app.Manager.Lookup(id)
	if !ok {
		e.t.Fatal("the session is not loaded")
	}
	var asked driver.Interaction
	poll.Eventually(e.t, "an approval to be asked", func() bool {
		for _, in := range ag.PendingInteractions() {
			if in.Kind == driver.KindApproval {
				asked = in
				return true
			}
		}
		return false
	}, poll.Within(10*time.Second))
	return asked
}

// "Allow for this session" over the service: decisions are checked, the
// allowed tool runs without a prompt, the session shows it, revoking needs
// write access and brings the prompt back; a fork inherits the allowed set
// of its seed.
func TestApproveAllowSessionAndRevoke(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	s := e.shared(service.NewSession{Mode: session.ModeAsk})
	sendWrite := func(name string) {
		t.Helper()
		if _, err := e.svc.SendMessage(ctx, e.alice, s.ID, service.Message{Content: "write: " + name + "\nhello from " + name}); err != nil {
			t.Fatal(err)
		}
	}

	sendWrite("notes.txt")
	in := e.pendingApproval(s.ID)
	if in.ToolName != "write" || in.Preview == nil || in.Preview.Path != "notes.txt" || !in.Preview.Created || !strings.Contains(in.Preview.Diff, "+hello from notes.txt") {
		t.Fatalf("approval %+v preview %+v", in, in.Preview)
	}
	got, err := e.svc.GetSession(ctx, e.dave, s.ID)
	if err != nil || len(got.Interactions) != 1 || got.Interactions[0].Preview == nil {
		t.Fatalf("session interactions %+v, %v", got.Interactions, err)
	}
	wantCode(t, "unknown decision", e.svc.Approve(ctx, e.alice, s.ID, in.ID, "always"), service.CodeBadRequest)
	wantCode(t, "empty decision", e.svc.Approve(ctx, e.alice, s.ID, in.ID, ""), service.CodeBadRequest)
	wantCode(t, "viewer allows", e.svc.Approve(ctx, e.dave, s.ID, in.ID, service.DecisionAllowSession), service.CodeForbidden)
	if err := e.svc.Approve(ctx, e.carol, s.ID, in.ID, service.DecisionAllowSession); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "decide twice", e.svc.Approve(ctx, e.alice, s.ID, in.ID, service.DecisionDeny), service.CodeNotPending)
	e.idle(s.ID)
	got, _ = e.svc.GetSession(ctx, e.dave, s.ID)
	if !slices.Equal(got.AllowedTools, []string{"write"}) {
		t.Fatalf("allowed tools %v", got.AllowedTools)
	}

	// The second write runs without asking.
	ag, _ := e.app.Manager.Lookup(s.ID)
	asked := func() int {
		n := 0
		for _, ev := range ag.Log().Events(0, ag.Log().Len()) {
			if ev.Type == session.TypeApprovalAsked {
				n++
			}
		}
		return n
	}
	sendWrite("other.txt")
	e.idle(s.ID)
	if n := asked(); n != 1 {
		t.Fatalf("%d approvals asked, want 1", n)
	}

	// A fork (a viewer may fork) inherits the allowed set of its seed.
	child, err := e.svc.Fork(ctx, e.dave, s.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cg, _ := e.svc.GetSession(ctx, e.dave, child.ID); !slices.Equal(cg.AllowedTools, []string{"write"}) {
		t.Fatalf("fork allowed tools %v", cg.AllowedTools)
	}

	// Revoke: write access, a tool name; revoking twice is fine.
	wantCode(t, "viewer revokes", e.svc.RevokeTool(ctx, e.dave, s.ID, "write"), service.CodeForbidden)
	wantCode(t, "stranger revokes", e.svc.RevokeTool(ctx, e.bob, s.ID, "write"), service.CodeNotFound)
	wantCode(t, "no tool", e.svc.RevokeTool(ctx, e.alice, s.ID, ""), service.CodeBadRequest)
	for range 2 {
		if err := e.svc.RevokeTool(ctx, e.carol, s.ID, "write"); err != nil {
			t.Fatal(err)
		}
	}
	got, _ = e.svc.GetSession(ctx, e.alice, s.ID)
	if len(got.AllowedTools) != 0 {
		t.Fatalf("allowed after revoke %v", got.AllowedTools)
	}
	sendWrite("third.txt")
	in = e.pendingApproval(s.ID)
	if err := e.svc.Approve(ctx, e.alice, s.ID, in.ID, service.DecisionAllow); err != nil {
		t.Fatal(err)
	}
	e.idle(s.ID)
	if n := asked(); n != 2 {
		t.Fatalf("%d approvals asked, want 2", n)
	}
	if got, _ = e.svc.GetSession(ctx, e.alice, s.ID); len(got.AllowedTools) != 0 {
		t.Fatalf("allow once allowed the tool for the session: %v", got.AllowedTools)
	}
}
