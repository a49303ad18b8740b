// Package apptest starts the whole app (internal/app) on a loopback server
// for tests that go through HTTP: users with tokens and Go clients, and a
// wait for a session to go idle.
//
// It is apart from testkit because it imports internal/app, which imports
// ws and web: their in-package tests could not import testkit otherwise.
// Tests that need the parts without HTTP use testkit.NewStack.
package apptest

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"harness/client"
	"harness/internal/app"
	"harness/internal/auth"
	"harness/internal/config"
	"harness/internal/testkit"
)

// Config is the configuration StartApp uses: a loopback port and SQLite in
// dir.
func Config(dir string) config.Config {
	return config.Config{
		Addr: "127.0.0.1:0", DataDir: dir, DBDriver: "sqlite", DBDSN: filepath.Join(dir, "harness.db"),
		ShutdownTimeout: 5 * time.Second, ForkCopyMax: config.DefaultForkCopyMax, AttachmentMax: config.DefaultAttachmentMax,
	}
}

// Options fills what StartApp defaults in opts: an empty environment (no
// model route from the host's variables) and the cheapest bcrypt cost.
func Options(opts app.Options) app.Options {
	if opts.Getenv == nil {
		opts.Getenv = func(string) string { return "" }
	}
	if opts.AuthOptions == nil {
		opts.AuthOptions = &auth.Options{BcryptCost: bcrypt.MinCost}
	}
	return opts
}

// App is the real app served on a loopback port.
type App struct {
	*app.App
	URL string
}

// StartApp builds the app on a temp data dir (SQLite) and serves it on
// loopback; both are closed in t.Cleanup. cfg may adjust the configuration
// (nil keeps it). Unset options default to an empty environment (no model
// route from the host's variables) and the cheapest bcrypt cost. It does not
// call Start (the first-admin bootstrap).
func StartApp(t testing.TB, cfg func(*config.Config), opts app.Options) *App {
	t.Helper()
	c := Config(t.TempDir())
	if cfg != nil {
		cfg(&c)
	}
	a, err := app.New(t.Context(), testkit.Logger(), c, Options(opts))
	if err != nil {
		t.Fatalf("build the app: %v", err)
	}
	// Served on the app's own listener (App.Listen), as cmd/web does, so
	// the app knows its address (web_fetch never reaches it).
	ln, err := a.Listen()
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	hs := httptest.NewUnstartedServer(a.Handler())
	_ = hs.Listener.Close()
	hs.Listener = ln
	hs.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := a.Close(ctx); err != nil {
			t.Errorf("close the app: %v", err)
		}
		hs.Close()
	})
	return &App{App: a, URL: hs.URL}
}

// User is an account with an API token and a Go client using it.
type User struct {
	ID     string
	Token  string
	Client *client.Client
}

// User creates an account named name (password name+"-password") with an
// API token.
func (a *App) User(t testing.TB, name string, admin bool) User {
	t.Helper()
	u, err := a.Auth.CreateUser(t.Context(), name, name+"-password", admin)
	if err != nil {
		t.Fatalf("create user %s: %v", name, err)
	}
	tok, err := a.Auth.CreateToken(t.Context(), name, "test")
	if err != nil {
		t.Fatalf("token for %s: %v", name, err)
	}
	return User{ID: u.ID, Token: tok, Client: client.New(a.URL, client.WithToken(tok))}
}

// WaitIdle waits for a session's agent to go idle; a session that is not
// loaded is idle.
func (a *App) WaitIdle(t testing.TB, id string) {
	t.Helper()
	ag, ok := a.Manager.Lookup(id)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := ag.Wait(ctx); err != nil {
		t.Fatalf("session %s did not go idle: %v", id, err)
	}
}
