package service_test

import (
	"testing"

	"harness/internal/auth"
	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/service"
	"harness/internal/session"
	"harness/internal/testkit"
)

// TestRetryTurn: the prompt of a failed turn is sent again as a new followup of the one who retries; turns that did not
// fail, unknown turns and readers are refused, and a refusal appends
// nothing.
func TestRetryTurn(t *testing.T) {
	t.Parallel()
	_, p := testkit.FakeRoute(t, fake.Script{Replies: []fake.Reply{
		{Error: &fake.HTTPError{Status: 401, Message: "Incorrect API key provided"}},
		{Text: "Recovered."},
	}}, testkit.RouteOptions{Name: "scripted", Label: "Scripted", Model: "m", ModelLabel: "M"})
	e := newEnvWith(t, p)
	ctx := t.Context()
	s := e.shared(service.NewSession{Provider: "scripted"})
	e.run(e.alice, s.ID, "build the thing")
	ag, _ := e.app.Manager.Lookup(s.ID)
	if end := lastTurnEnd(t, ag.Log()); end.Turn != 1 || end.Reason.Kind != session.ReasonError {
		t.Fatalf("turn 1 ended %+v, want an error", end)
	}

	tests := []struct {
		name string
		turn int
		who  string
		want service.Code
	}{
		{"viewer", 1, "dave", service.CodeForbidden},
		{"stranger", 1, "bob", service.CodeNotFound},
		{"no turn", 0, "alice", service.CodeBadRequest},
		{"unknown turn", 9, "alice", service.CodeNotFound},
	}
	for _, tt := range tests {
		a := map[string]*auth.Actor{"alice": e.alice, "bob": e.bob, "dave": e.dave}[tt.who]
		before := ag.Log().Len()
		_, err := e.svc.RetryTurn(ctx, a, s.ID, tt.turn, "")
		wantCode(t, tt.name, err, tt.want)
		if n := ag.Log().Len(); n != before {
			t.Errorf("%s: a refused retry appended %d events", tt.name, n-before)
		}
	}

	// A collaborator retries: the same text, from them, in a new turn.
	id, err := e.svc.RetryTurn(ctx, e.carol, s.ID, 1, "req-retry")
	if err != nil {
		t.Fatal(err)
	}
	e.idle(s.ID)
	var sent *llm.Message
	turnOf := 0
	for _, ev := range ag.Log().Events(0, ag.Log().Len()) {
		switch ev.Type {
		case session.TypeTurnStart:
			ts, _ := session.Decode[session.TurnStart](ev)
			turnOf = ts.Turn
		case session.TypeUserMessage:
			if m, _ := session.Decode[llm.Message](ev); m.ID == id {
				sent = &m
				if turnOf != 2 {
					t.Errorf("the retried prompt ran in turn %d, want 2", turnOf)
				}
			}
		}
	}
	if sent == nil || sent.Text() != "build the thing" || sent.Source.UserID != e.carol.UserID || sent.Source.ClientID != "req-retry" {
		t.Fatalf("retried message %+v", sent)
	}
	if end := lastTurnEnd(t, ag.Log()); end.Turn != 2 || end.Reason.Kind != session.ReasonCompleted {
		t.Errorf("turn 2 ended %+v, want completed", end)
	}
	// Turn 2 did not fail: nothing to retry.
	_, err = e.svc.RetryTurn(ctx, e.alice, s.ID, 2, "")
	wantCode(t, "completed turn", err, service.CodeBadRequest)
}

func lastTurnEnd(t *testing.T, l *session.Log) session.TurnEnd {
	t.Helper()
	var end session.TurnEnd
	for _, ev := range l.Events(0, l.Len()) {
		if ev.Type == session.TypeTurnEnd {
			end, _ = session.Decode[session.TurnEnd](ev)
		}
	}
	return end
}
