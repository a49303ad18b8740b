package service_test

import (
	"context"
	"strings"
	"testing"

	"harness/internal/auth"
	"harness/internal/compact"
	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/service"
	"harness/internal/session"
	"harness/internal/testkit"
)

// compactionEvents counts the compaction events of a log by type.
func compactionEvents(l *session.Log) map[session.Type]int {
	n := map[session.Type]int{}
	for _, ev := range l.Events(0, l.Len()) {
		switch ev.Type {
		case session.TypeCompactionStart, session.TypeCompactionSum, session.TypeCompactionEnd:
			n[ev.Type]++
		}
	}
	return n
}

func TestCompact(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	s := e.shared(service.NewSession{})
	// The demo's summaries are about 550 tokens: the history must be larger.
	for _, p := range []string{"long: 400", "long: 300", "third question"} {
		e.run(e.alice, s.ID, p)
	}
	ag, _ := e.app.Manager.Lookup(s.ID)
	l := ag.Log()

	// Refused actors change nothing.
	before := l.Len()
	for _, tt := range []struct {
		name string
		a    *auth.Actor
		want service.Code
	}{
		{"viewer", e.dave, service.CodeForbidden},
		{"other user", e.bob, service.CodeNotFound},
		{"anonymous", nil, service.CodeUnauthorized},
	} {
		_, err := e.svc.Compact(ctx, tt.a, s.ID)
		wantCode(t, tt.name, err, tt.want)
	}
	if l.Len() != before {
		t.Fatalf("refused compactions appended %d events", l.Len()-before)
	}

	sum, err := e.svc.GetSession(ctx, e.alice, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.svc.Compact(ctx, e.carol, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Compacted || res.Replaced < 2 || res.TokensSaved <= 0 || res.CompactionID == "" || res.CommandID == "" {
		t.Fatalf("result %+v: want a compaction of the older exchanges", res)
	}
	if !strings.Contains(res.Message, "Compacted") {
		t.Errorf("message %q", res.Message)
	}
	if res.Context.Tokens <= 0 || res.Context.Tokens >= sum.Context.Tokens {
		t.Errorf("meter %d tokens after compaction, %d before: want it to drop", res.Context.Tokens, sum.Context.Tokens)
	}
	if got := compactionEvents(l); got[session.TypeCompactionStart] != 1 || got[session.TypeCompactionSum] != 1 || got[session.TypeCompactionEnd] != 1 {
		t.Errorf("compaction events %v, want one bracket with a summary", got)
	}
	// The bracket is manual (no turn) and carries the command id.
	for _, ev := range l.Events(before, l.Len()) {
		if ev.Type != session.TypeCompactionStart {
			continue
		}
		cs, err := session.Decode[session.CompactionStart](ev)
		if err != nil || cs.Turn != nil || cs.SourceCommandID != res.CommandID || cs.CompactionID != res.CompactionID {
			t.Errorf("compaction/start %+v (%v), want turn null and command %q", cs, err, res.CommandID)
		}
	}
	after, err := e.svc.GetSession(ctx, e.alice, s.ID)
	if err != nil || after.Context != res.Context {
		t.Errorf("summary meter %+v (%v), want the compaction's %+v", after.Context, err, res.Context)
	}
	// The session goes on from the checkpoint.
	e.run(e.alice, s.ID, "fourth question")
}

func TestCompactNothingYet(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.shared(service.NewSession{})
	res, err := e.svc.Compact(t.Context(), e.alice, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Compacted || res.Replaced != 0 || res.Message != "No compactable history yet." {
		t.Errorf("result %+v, want nothing compacted", res)
	}
	ag, _ := e.app.Manager.Lookup(s.ID)
	if n := ag.Log().Len(); n != 0 {
		t.Errorf("nothing to compact appended %d events", n)
	}
}

func TestCompactBusy(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	tests := []struct {
		name string
		// hold makes the agent busy and returns what ends it.
		hold func(t *testing.T, id string) (release func())
	}{
		{"running turn", func(t *testing.T, id string) func() {
			if _, err := e.svc.SendMessage(ctx, e.alice, id, service.Message{Content: "long: 100000"}); err != nil {
				t.Fatal(err)
			}
			return func() {
				if err := e.svc.Cancel(ctx, e.alice, id, false); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"another maintenance task", func(t *testing.T, id string) func() {
			ag, _ := e.app.Manager.Lookup(id)
			started, stop, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
			go func() {
				done <- ag.RunMaintenance(context.Background(), func(context.Context) error {
					close(started)
					<-stop
					return nil
				})
			}()
			<-started
			return func() {
				close(stop)
				if err := <-done; err != nil {
					t.Error(err)
				}
			}
		}},
		{"a live compaction lock", func(t *testing.T, id string) func() {
			ag, _ := e.app.Manager.Lookup(id)
			if _, err := ag.Log().Append(session.TypeCompactionStart, session.CompactionStart{CompactionID: "held"}); err != nil {
				t.Fatal(err)
			}
			return func() {
				if _, err := ag.Log().Append(session.TypeCompactionEnd, session.CompactionEnd{CompactionID: "held"}); err != nil {
					t.Fatal(err)
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := e.shared(service.NewSession{})
			e.run(e.alice, s.ID, "long: 400")
			e.run(e.alice, s.ID, "two")
			release := tt.hold(t, s.ID)
			_, err := e.svc.Compact(ctx, e.alice, s.ID)
			wantCode(t, "compact while busy", err, service.CodeBusy)
			if se, ok := err.(*service.Error); ok && !strings.Contains(se.Message, "idle") {
				t.Errorf("busy message %q does not say to wait for idle", se.Message)
			}
			release()
			e.idle(s.ID)
			if res, err := e.svc.Compact(ctx, e.alice, s.ID); err != nil || !res.Compacted {
				t.Errorf("compact once idle: %+v, %v", res, err)
			}
		})
	}
}

// TestCompactModelFailure: a summary call that fails is compaction_failed
// (502), the history stays and the bracket is closed with the error.
func TestCompactModelFailure(t *testing.T) {
	t.Parallel()
	_, p := testkit.FakeRoute(t, fake.Script{Responder: func(rec fake.Recorded) fake.Reply {
		if rec.Header.Get("X-Harness-Purpose") == string(llm.PurposeCompaction) {
			return fake.Reply{Error: &fake.HTTPError{Status: 400, Message: "summaries are off today"}}
		}
		return fake.Reply{Text: strings.Repeat("A long enough answer. ", 40)}
	}}, testkit.RouteOptions{Name: "scripted", Label: "Scripted", Model: "m", ModelLabel: "M", Window: 50_000})
	e := newEnvWith(t, p)
	s, err := e.svc.CreateSession(t.Context(), e.alice, service.NewSession{Provider: "scripted"})
	if err != nil {
		t.Fatal(err)
	}
	e.run(e.alice, s.ID, "one")
	e.run(e.alice, s.ID, "two")
	ag, _ := e.app.Manager.Lookup(s.ID)
	surface := ag.Log().Surface()
	_, err = e.svc.Compact(t.Context(), e.alice, s.ID)
	wantCode(t, "failed summary", err, service.CodeCompactionFailed)
	if got := service.CodeCompactionFailed.HTTPStatus(); got != 502 {
		t.Errorf("compaction_failed is HTTP %d, want 502", got)
	}
	if se, ok := err.(*service.Error); ok && strings.Contains(se.Message, "summaries are off") {
		t.Errorf("the answer leaks the provider's message: %q", se.Message)
	}
	if got := ag.Log().Surface(); len(got) != len(surface) {
		t.Errorf("surface %v after a failed compaction, want %v", got, surface)
	}
	got := compactionEvents(ag.Log())
	if got[session.TypeCompactionStart] != 1 || got[session.TypeCompactionEnd] != 1 || got[session.TypeCompactionSum] != 0 {
		t.Errorf("compaction events %v, want one closed bracket without a summary", got)
	}
}

// TestSessionContextMeter: the summary's meter rises as the conversation
// grows, reports the route's window and agrees with compact.Meter.
func TestSessionContextMeter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	s := e.shared(service.NewSession{})
	got, err := e.svc.GetSession(ctx, e.dave, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Context.Tokens != 0 || got.Context.Window != 128_000 {
		t.Errorf("new session meter %+v, want 0 of the demo's 128000", got.Context)
	}
	var last int64
	for i, p := range []string{"hello", "tell me more", "and more"} {
		e.run(e.alice, s.ID, p)
		got, err := e.svc.GetSession(ctx, e.dave, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		c := got.Context
		if c.Tokens <= last {
			t.Errorf("turn %d: meter %d tokens, not above %d", i+1, c.Tokens, last)
		}
		last = c.Tokens
		ag, _ := e.app.Manager.Lookup(s.ID)
		m := compact.NewMeter().Measure(ag.Log(), 128_000)
		if c.Tokens != m.TotalTokens || c.Window != 128_000 {
			t.Errorf("turn %d: meter %+v, compact.Meter says %d", i+1, c, m.TotalTokens)
		}
		if want := float64(int64(m.Percent*10+0.5)) / 10; c.Percent != want {
			t.Errorf("turn %d: percent %v, want %v", i+1, c.Percent, want)
		}
		live, ok := e.svc.LiveContext(ctx, s.ID)
		if !ok || live != c {
			t.Errorf("turn %d: live meter %+v (%v), summary %+v", i+1, live, ok, c)
		}
	}
	if _, ok := e.svc.LiveContext(ctx, "no-such-session"); ok {
		t.Error("LiveContext measured a session that is not loaded")
	}
}
