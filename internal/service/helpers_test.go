package service_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"harness/internal/app"
	"harness/internal/auth"
	"harness/internal/config"
	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/service"
)

// env is the app on a temp dir with the demo model (no HTTP: the service
// is called directly) and one actor per role.
type env struct {
	t   *testing.T
	app *app.App
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
	dir := t.TempDir()
	cfg := config.Config{Addr: "127.0.0.1:0", DataDir: dir, DBDriver: "sqlite", DBDSN: filepath.Join(dir, "h.db"), ShutdownTimeout: 5 * time.Second}
	a, err := app.New(t.Context(), slog.New(slog.DiscardHandler), cfg, app.Options{
		Getenv:         func(string) string { return "" },
		Providers:      providers,
		DemoOptions:    []fake.Option{fake.WithChunkDelay(time.Millisecond)},
		VerifyRequests: true,
		AuthOptions:    &auth.Options{BcryptCost: bcrypt.MinCost},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := a.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	e := &env{t: t, app: a, svc: a.Service}
	e.alice, e.bob, e.carol, e.dave = e.user("alice", false), e.user("bob", false), e.user("carol", false), e.user("dave", false)
	e.root = e.user("root", true)
	return e
}

func (e *env) user(name string, admin bool) *auth.Actor {
	e.t.Helper()
	ctx := e.t.Context()
	if _, err := e.app.Auth.CreateUser(ctx, name, name+"-password", admin); err != nil {
		e.t.Fatal(err)
	}
	tok, err := e.app.Auth.CreateToken(ctx, name, "test")
	if err != nil {
		e.t.Fatal(err)
	}
	a, err := e.app.Auth.TokenActor(ctx, tok)
	if err != nil {
		e.t.Fatal(err)
	}
	return a
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
	ag, ok := e.app.Manager.Lookup(id)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(e.t.Context(), 20*time.Second)
	defer cancel()
	if err := ag.Wait(ctx); err != nil {
		e.t.Fatalf("not idle: %v", err)
	}
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
