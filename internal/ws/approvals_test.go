package ws_test

import (
	"slices"
	"strings"
	"testing"

	"harness/client"
)

// allowedPush waits for the next approvals/allowed push.
func allowedPush(t *testing.T, sub *client.Subscription) []string {
	t.Helper()
	ps := collect(t, sub, func(p client.Push) bool { return p.Ch == client.ChAllowed })
	return ps[len(ps)-1].Tools
}

// The approve op takes allow, allow-session or deny (anything else is a
// coded bad_request); approvals.revoke needs write access and a tool; the
// allowed tools are part of the subscribe snapshot and pushed on change.
func TestApproveDecisionsAndRevokeOverWebSocket(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	id := e.session(client.NewSession{Provider: "demo"}) // mode ask
	cn := e.dial(e.alice)
	sub := subscribe(t, cn, id, -1)
	if tools := allowedPush(t, sub); len(tools) != 0 {
		t.Fatalf("snapshot allowed %v", tools)
	}
	if _, err := cn.Followup(t.Context(), id, "write: notes.txt\nhello\nworld"); err != nil {
		t.Fatal(err)
	}
	rs := collect(t, sub, func(p client.Push) bool { return p.Ch == client.ChInteractionRequested })
	in := rs[len(rs)-1].Interaction
	if in.ToolName != "write" || in.Preview == nil || in.Preview.Added != 2 || !strings.Contains(in.Preview.Diff, "+hello\n+world") {
		t.Fatalf("requested %+v preview %+v", in, in.Preview)
	}

	for _, bad := range []client.Decision{"", "allow_session", "ALLOW", "always"} {
		if err := cn.Decide(t.Context(), id, in.ID, bad); client.CodeOf(err) != "bad_request" {
			t.Errorf("decision %q: %v, want bad_request", bad, err)
		}
	}
	bob := e.dial(e.bob)
	if err := bob.ApproveSession(t.Context(), id, in.ID); client.CodeOf(err) != "not_found" {
		t.Errorf("stranger approves: %v, want not_found", err)
	}
	if err := cn.ApproveSession(t.Context(), id, in.ID); err != nil {
		t.Fatal(err)
	}
	if tools := allowedPush(t, sub); !slices.Equal(tools, []string{"write"}) {
		t.Fatalf("pushed allowed %v", tools)
	}
	ps := collect(t, sub, turnEnded(1))
	var resolved *client.Interaction
	for _, p := range ps {
		if p.Ch == client.ChInteractionResolved {
			resolved = p.Interaction
		}
	}
	if resolved == nil || resolved.Outcome != "allowed-session" {
		t.Fatalf("resolved %+v", resolved)
	}

	// A new subscriber gets the allowed tools in its snapshot.
	late := subscribe(t, e.dial(e.alice), id, -1)
	if tools := allowedPush(t, late); !slices.Equal(tools, []string{"write"}) {
		t.Fatalf("late snapshot allowed %v", tools)
	}

	if err := cn.RevokeTool(t.Context(), id, ""); client.CodeOf(err) != "bad_request" {
		t.Errorf("revoke without tool: %v, want bad_request", err)
	}
	if err := bob.RevokeTool(t.Context(), id, "write"); client.CodeOf(err) != "not_found" {
		t.Errorf("stranger revokes: %v, want not_found", err)
	}
	if err := cn.RevokeTool(t.Context(), id, "write"); err != nil {
		t.Fatal(err)
	}
	if tools := allowedPush(t, sub); len(tools) != 0 {
		t.Fatalf("pushed allowed after revoke %v", tools)
	}
}
