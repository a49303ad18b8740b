package service_test

import (
	"errors"
	"testing"
	"time"

	"harness/internal/auth"
	"harness/internal/compact"
	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/service"
	"harness/internal/testkit"
)

// env is the test stack (testkit.Stack) wired as the app wires it, with
// the demo model and compaction, the service called directly, and one
// actor per role.
type env struct {
	t   *testing.T
	app *testkit.Stack
	svc *service.Service
	// alice owns; carol collaborates and dave views alice's sessions when
	// shared; bob is another user; root is an admin.
	alice, bob, carol, dave, root *auth.Actor
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t)
}

// newEnvWith is newEnv with extra model routes (the first is the default).
func newEnvWith(t *testing.T, providers ...llm.Provider) *env {
	t.Helper()
	return newEnvOn(t, testkit.StackOptions{Providers: providers})
}

// newEnvOn builds the env on a stack o describes; the demo model (paced so
// a test can act during a turn), request verification and compaction are
// always on.
func newEnvOn(t *testing.T, o testkit.StackOptions) *env {
	t.Helper()
	o.Demo, o.DemoOptions = true, []fake.Option{fake.WithChunkDelay(time.Millisecond)}
	o.VerifyRequests = true
	o.Subagents = true
	o.Compaction = &compact.Options{}
	st := testkit.NewStack(t, o)
	e := &env{t: t, app: st, svc: st.Service}
	e.alice, e.bob, e.carol, e.dave = e.user("alice", false), e.user("bob", false), e.user("carol", false), e.user("dave", false)
	e.root = e.user("root", true)
	return e
}

func (e *env) user(name string, admin bool) *auth.Actor {
	e.t.Helper()
	return e.app.Actor(name, admin)
}

// shared creates a session of alice's with carol as collaborator and dave
// as viewer.
func (e *env) shared(opts service.NewSession) service.Session {
	e.t.Helper()
	ctx := e.t.Context()
	if opts.Provider == "" {
		opts.Provider = "demo"
	}
	s, err := e.svc.CreateSession(ctx, e.alice, opts)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.svc.AddMember(ctx, e.alice, s.ID, "carol", auth.SessionRoleCollaborator); err != nil {
		e.t.Fatal(err)
	}
	if err := e.svc.AddMember(ctx, e.alice, s.ID, "dave", auth.SessionRoleViewer); err != nil {
		e.t.Fatal(err)
	}
	return s
}

// run sends a followup and waits for the session to go idle.
func (e *env) run(a *auth.Actor, id, text string) string {
	e.t.Helper()
	msg, err := e.svc.SendMessage(e.t.Context(), a, id, service.Message{Content: text})
	if err != nil {
		e.t.Fatal(err)
	}
	e.idle(id)
	return msg
}

func (e *env) idle(id string) {
	e.t.Helper()
	e.app.WaitIdle(e.t, id)
}

// code is the service error code of err ("" for nil).
func code(err error) service.Code {
	if err == nil {
		return ""
	}
	var se *service.Error
	if !errors.As(err, &se) {
		return "not-a-service-error"
	}
	return se.Code
}

func wantCode(t *testing.T, what string, err error, want service.Code) {
	t.Helper()
	if got := code(err); got != want {
		t.Errorf("%s: %v (code %q), want %q", what, err, got, want)
	}
}
