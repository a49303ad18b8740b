package service_test

import (
	"bytes"

	"testing"

	"harness/internal/auth"
	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/llm/openai"
	"harness/internal/service"
	"harness/internal/session"
	"harness/internal/testkit"
)

// effortEnv is a stack whose default route ("scripted", model "m") is the
// real OpenAI adapter on a DeepSeek-dialect fake server listing efforts
// off and high (default high); the demo route lists off, low, high, max.
func effortEnv(t *testing.T) (*env, *fake.Server) {
	t.Helper()
	srv, p := testkit.FakeRoute(t, fake.Script{Responder: func(fake.Recorded) fake.Reply {
		return fake.Reply{Text: "ok"}
	}}, testkit.RouteOptions{Name: "scripted", Label: "Scripted", Model: "m", ModelLabel: "M", Thinking: true, Efforts: true})
	return newEnvWith(t, p), srv
}

// lastTurnRequest is the body of the last conversation request the fake
// server got (title requests aside).
func lastTurnRequest(t *testing.T, srv *fake.Server) map[string]any {
	t.Helper()
	recs := srv.Requests()
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Header.Get(openai.HeaderPurpose) == "" {
			return recs[i].Body
		}
	}
	t.Fatal("no conversation request reached the model")
	return nil
}

// sentEffort is what a request body says of reasoning: the thinking switch
// and reasoning_effort ("" when absent).
func sentEffort(body map[string]any) (thinking, effort string) {
	th, _ := body["thinking"].(map[string]any)
	thinking, _ = th["type"].(string)
	effort, _ = body["reasoning_effort"].(string)
	return thinking, effort
}

// effortEvents are the log's model/effort events.
func effortEvents(t *testing.T, e *env, id string) []session.EffortSelected {
	t.Helper()
	ag, err := e.app.Manager.Get(t.Context(), id) // an import leaves it unloaded
	if err != nil {
		t.Fatal(err)
	}
	var out []session.EffortSelected
	for _, ev := range ag.Log().Events(0, ag.Log().Len()) {
		if ev.Type != session.TypeEffortSelected {
			continue
		}
		v, err := session.Decode[session.EffortSelected](ev)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// TestSetEffortAuthorization: writers set it; a viewer, a stranger, an
// unknown effort and one the session's model does not list are refused
// and log nothing.
func TestSetEffortAuthorization(t *testing.T) {
	t.Parallel()
	e, _ := effortEnv(t)
	s := e.shared(service.NewSession{Provider: "scripted"})
	cases := []struct {
		name   string
		actor  func() *auth.Actor
		effort llm.Effort
		want   service.Code
	}{
		{"viewer", func() *auth.Actor { return e.dave }, llm.EffortOff, service.CodeForbidden},
		{"stranger", func() *auth.Actor { return e.bob }, llm.EffortOff, service.CodeNotFound},
		{"unknown effort", func() *auth.Actor { return e.alice }, "medium", service.CodeBadRequest},
		{"not listed by the model", func() *auth.Actor { return e.alice }, llm.EffortLow, service.CodeBadRequest},
		{"collaborator", func() *auth.Actor { return e.carol }, llm.EffortOff, ""},
		{"owner back to the default", func() *auth.Actor { return e.alice }, "", ""},
	}
	for _, c := range cases {
		err := e.svc.SetEffort(t.Context(), c.actor(), s.ID, c.effort)
		wantCode(t, c.name, err, c.want)
	}
	got := effortEvents(t, e, s.ID)
	if len(got) != 2 || got[0].Effort != llm.EffortOff || got[0].By == nil || got[0].By.Name != "carol" || got[1].Effort != "" {
		t.Fatalf("model/effort events %+v, want carol's off then the default", got)
	}
}

// TestEffortReachesTheModel: the session's choice is a durable event, the
// row and the request/header say it, and the real go-openai client sends
// DeepSeek's fields for it; choosing the same again logs nothing; an
// effort the next model does not list falls back to that model's default
// instead of failing the turn; a fork keeps the choice.
func TestEffortReachesTheModel(t *testing.T) {
	t.Parallel()
	e, srv := effortEnv(t)
	ctx := t.Context()
	s := e.shared(service.NewSession{Provider: "scripted"})

	steps := []struct {
		name                     string
		provider                 string // "" keeps the route
		effort                   *llm.Effort
		wantThinking, wantEffort string
	}{
		{name: "no choice: the model's default", wantThinking: "enabled", wantEffort: "high"},
		{name: "off", effort: new(llm.EffortOff), wantThinking: "disabled"},
		{name: "high", effort: new(llm.EffortHigh), wantThinking: "enabled", wantEffort: "high"},
		{name: "max on the demo route", provider: "demo", effort: new(llm.EffortMax)},
		{name: "max is not listed by m: its default", provider: "scripted", wantThinking: "enabled", wantEffort: "high"},
		{name: "off again", effort: new(llm.EffortOff), wantThinking: "disabled"},
	}
	for _, st := range steps {
		if st.provider != "" {
			if err := e.svc.SetModel(ctx, e.alice, s.ID, st.provider, ""); err != nil {
				t.Fatalf("%s: set model: %v", st.name, err)
			}
		}
		if st.effort != nil {
			if err := e.svc.SetEffort(ctx, e.carol, s.ID, *st.effort); err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
			row, err := e.app.Store.GetSession(ctx, s.ID)
			if err != nil || row.Effort != string(*st.effort) {
				t.Fatalf("%s: stored row effort %q (%v)", st.name, row.Effort, err)
			}
		}
		if st.wantThinking == "" {
			continue // the demo route answers in-process: nothing recorded here
		}
		before := len(srv.Requests())
		e.run(e.alice, s.ID, st.name)
		if len(srv.Requests()) == before {
			t.Fatalf("%s: no request reached the fake model", st.name)
		}
		thinking, effort := sentEffort(lastTurnRequest(t, srv))
		if thinking != st.wantThinking || effort != st.wantEffort {
			t.Errorf("%s: sent thinking %q reasoning_effort %q, want %q %q", st.name, thinking, effort, st.wantThinking, st.wantEffort)
		}
	}
	ag, _ := e.app.Manager.Lookup(s.ID)
	if h, ok := ag.Log().RequestHeader(); !ok || h.Config.ReasoningEffort != llm.EffortOff {
		t.Errorf("last request/header config %+v, want reasoningEffort off", h.Config)
	}
	// Setting the current choice again changes nothing.
	n := len(effortEvents(t, e, s.ID))
	if err := e.svc.SetEffort(ctx, e.alice, s.ID, llm.EffortOff); err != nil {
		t.Fatal(err)
	}
	if got := effortEvents(t, e, s.ID); len(got) != n || n != 4 {
		t.Fatalf("%d model/effort events after a repeat, want 4 (off, high, max, off)", len(got))
	}
	got, err := e.svc.GetSession(ctx, e.dave, s.ID)
	if err != nil || got.Effort != llm.EffortOff {
		t.Fatalf("the row a viewer reads: effort %q (%v), want off", got.Effort, err)
	}

	child, err := e.svc.Fork(ctx, e.alice, s.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	cag, _ := e.app.Manager.Lookup(child.ID)
	if sel := cag.Log().State().Effort; child.Effort != llm.EffortOff || sel == nil || sel.Effort != llm.EffortOff {
		t.Fatalf("fork: row effort %q, log state %+v; want off", child.Effort, sel)
	}
}

// TestPatchEffort: PATCH checks the effort against the model it ends on,
// before it changes anything; a refused patch leaves the route too.
func TestPatchEffort(t *testing.T) {
	t.Parallel()
	e, _ := effortEnv(t)
	ctx := t.Context()
	s := e.shared(service.NewSession{Provider: "scripted"})
	low := llm.EffortLow
	if _, err := e.svc.UpdateSession(ctx, e.alice, s.ID, service.Patch{Effort: &low}); code(err) != service.CodeBadRequest {
		t.Fatalf("low on m: %v, want bad_request", err)
	}
	demo := "demo"
	got, err := e.svc.UpdateSession(ctx, e.alice, s.ID, service.Patch{Provider: &demo, Effort: &low})
	if err != nil {
		t.Fatal(err)
	}
	if got.Provider != "demo" || got.Effort != llm.EffortLow {
		t.Fatalf("after the patch: %s effort %q, want demo low", got.Provider, got.Effort)
	}
	// Back to m with low: refused before anything changes.
	scripted := "scripted"
	if _, err := e.svc.UpdateSession(ctx, e.alice, s.ID, service.Patch{Provider: &scripted, Effort: &low}); code(err) != service.CodeBadRequest {
		t.Fatalf("scripted with low: %v, want bad_request", err)
	}
	if got, err := e.svc.GetSession(ctx, e.alice, s.ID); err != nil || got.Provider != "demo" || got.Effort != llm.EffortLow {
		t.Fatalf("after a refused patch: %s effort %q (%v), want demo low unchanged", got.Provider, got.Effort, err)
	}
}

// TestEffortSurvivesExportImport: the choice is in the log, so an exported
// and imported session keeps it (row and log).
func TestEffortSurvivesExportImport(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	s := e.shared(service.NewSession{})
	if err := e.svc.SetEffort(ctx, e.alice, s.ID, llm.EffortLow); err != nil {
		t.Fatal(err)
	}
	e.run(e.alice, s.ID, "hello")
	var export bytes.Buffer
	if err := e.svc.Export(ctx, e.alice, s.ID, &export); err != nil {
		t.Fatal(err)
	}
	imp, err := e.svc.Import(ctx, e.bob, bytes.NewReader(export.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	row, err := e.app.Store.GetSession(ctx, imp.ID)
	if err != nil || row.Effort != string(llm.EffortLow) || imp.Effort != llm.EffortLow {
		t.Fatalf("imported row effort %q / %q (%v), want low", row.Effort, imp.Effort, err)
	}
	if got := effortEvents(t, e, imp.ID); len(got) != 1 || got[0].Effort != llm.EffortLow {
		t.Fatalf("imported log's model/effort events %+v", got)
	}
}
