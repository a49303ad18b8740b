package session

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The tools allowed for the session are folded from the log: an
// allowed-session decision adds its tool, a revocation removes it, other
// outcomes change nothing; a reload and a fork's seed give the same set.
func TestAllowedToolsFold(t *testing.T) {
	t.Parallel()
	l := newTestLog()
	s := newScript(t, l)
	s.startTurn()
	s.startStep()
	for i, d := range []ApprovalDecided{
		{ID: "a1", Outcome: ApprovalAllowedOnce},
		{ID: "a2", Outcome: ApprovalAllowedSession, Tool: "write", By: &Actor{UserID: "u1"}},
		{ID: "a3", Outcome: ApprovalAllowedSession, Tool: "bash"},
		{ID: "a4", Outcome: ApprovalAllowedSession, Tool: "write"}, // again: still once
		{ID: "a5", Outcome: ApprovalRejected},
	} {
		s.append(TypeApprovalAsked, ApprovalAsked{ID: d.ID, ToolName: "write", Preview: &ApprovalPreview{Kind: PreviewDiff, Path: "f", Diff: "+x\n", Added: 1, Created: true}})
		s.append(TypeApprovalDecided, d)
		if i == 0 && l.State().AllowedTools != nil {
			t.Fatalf("allowed-once allowed a tool for the session: %v", l.State().AllowedTools)
		}
	}
	if got := l.State().AllowedTools; !slices.Equal(got, []string{"bash", "write"}) {
		t.Fatalf("allowed %v, want [bash write]", got)
	}
	st := l.State()
	if !st.ToolAllowed("write") || st.ToolAllowed("edit") {
		t.Fatal("ToolAllowed disagrees with AllowedTools")
	}
	st.AllowedTools[0] = "mutated"
	if l.State().AllowedTools[0] != "bash" {
		t.Fatal("State shares AllowedTools with the log")
	}
	s.endStep()
	s.endTurn()
	boundary := l.Len() - 1

	// Revocation works between turns; revoking a tool not allowed is a
	// no-op for the fold.
	s.append(TypeApprovalRevoked, ApprovalRevoked{Tool: "bash", By: &Actor{UserID: "u1"}})
	s.append(TypeApprovalRevoked, ApprovalRevoked{Tool: "edit"})
	if got := l.State().AllowedTools; !slices.Equal(got, []string{"write"}) {
		t.Fatalf("after revoking bash: %v", got)
	}
	s.append(TypeApprovalRevoked, ApprovalRevoked{Tool: "write"})
	if got := l.State().AllowedTools; got != nil {
		t.Fatalf("after revoking all: %v, want nil", got)
	}

	// A reload folds the same state at every prefix.
	events := l.Events(0, l.Len())
	if err := CheckInvariants(events); err != nil {
		t.Fatal(err)
	}
	re, err := Load(Header{ID: "s1"}, events, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := re.State().AllowedTools; got != nil {
		t.Fatalf("reloaded %v", got)
	}
	// A fork at the end of the turn inherits what its seed allowed.
	seed, err := Fork(l, boundary)
	if err != nil {
		t.Fatal(err)
	}
	child, err := NewSeeded(Header{ID: "s2"}, seed, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := child.State().AllowedTools; !slices.Equal(got, []string{"bash", "write"}) {
		t.Fatalf("fork inherited %v, want [bash write]", got)
	}
	// The preview survives the round trip through the stored bytes.
	for _, ev := range events {
		if ev.Type == TypeApprovalAsked {
			a, err := Decode[ApprovalAsked](ev)
			if err != nil || a.Preview == nil || a.Preview.Diff != "+x\n" || !a.Preview.Created {
				t.Fatalf("asked %+v %v", a, err)
			}
			break
		}
	}
}

func TestApprovalScopeDataChecks(t *testing.T) {
	t.Parallel()
	l := newTestLog()
	s := newScript(t, l)
	s.startTurn()
	s.append(TypeApprovalAsked, ApprovalAsked{ID: "a1", ToolName: "write"})
	n := l.Len()
	_, err := l.Append(TypeApprovalDecided, ApprovalDecided{ID: "a1", Outcome: ApprovalAllowedSession})
	wantCode(t, err, CodeInvalidData)
	_, err = l.Append(TypeApprovalDecided, ApprovalDecided{ID: "a1", Outcome: ApprovalAllowedOnce, Tool: "write"})
	wantCode(t, err, CodeInvalidData)
	_, err = l.Append(TypeApprovalRevoked, json.RawMessage(`{"tool":""}`))
	wantCode(t, err, CodeInvalidData)
	if l.Len() != n {
		t.Fatal("a refused event was appended")
	}
	// The wire names.
	ev := s.append(TypeApprovalDecided, ApprovalDecided{ID: "a1", Outcome: ApprovalAllowedSession, Tool: "write"})
	if string(ev.Data) != `{"id":"a1","outcome":"allowed-session","tool":"write"}` {
		t.Fatalf("decided data %s", ev.Data)
	}
	ev = s.append(TypeApprovalRevoked, ApprovalRevoked{Tool: "write", By: &Actor{UserID: "u", Name: "Al"}})
	if ev.Type != "approval/revoked" || string(ev.Data) != `{"tool":"write","by":{"userId":"u","name":"Al"}}` {
		t.Fatalf("revoked %s %s", ev.Type, ev.Data)
	}
	if !ApprovalAllowedSession.Allows() || !ApprovalAllowedOnce.Allows() || ApprovalRejected.Allows() || ApprovalCancelled.Allows() {
		t.Fatal("Allows")
	}
}

// The upstream outcomes keep their wire names; the additions are written
// down as deviations in docs/lifecycle.md.
func TestLifecycleDocRecordsDeviations(t *testing.T) {
	t.Parallel()
	for o, want := range map[ApprovalOutcome]string{
		ApprovalAllowedOnce: "allowed-once", ApprovalRejected: "rejected",
		ApprovalCancelled: "cancelled", ApprovalUnavailable: "unavailable",
	} {
		if string(o) != want {
			t.Errorf("upstream outcome %q renamed to %q", want, o)
		}
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "lifecycle.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, want := range []string{
		"`" + string(ApprovalAllowedSession) + "`",
		"`" + string(TypeApprovalRevoked) + " {tool, by?}`",
		"`allowed-once`, `rejected`",
		"Why:",
		"a fork inherits",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("docs/lifecycle.md does not record %q", want)
		}
	}
}
