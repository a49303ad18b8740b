package apptest_test

import (
	"testing"

	"harness/client"
	"harness/internal/app"
	"harness/internal/auth"
	"harness/internal/config"
	"harness/internal/testkit/apptest"
)

func TestStartApp(t *testing.T) {
	t.Parallel()
	a := apptest.StartApp(t, func(c *config.Config) { c.AdminPassword = "admin-password" }, app.Options{})
	if a.Config.AdminPassword != "admin-password" {
		t.Errorf("cfg not applied: %+v", a.Config)
	}
	if err := a.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if p, _ := a.Providers.Default(); p != "demo" {
		t.Errorf("default route %q, want the demo (the host's environment must not add one)", p)
	}

	ada, root := a.User(t, "ada", false), a.User(t, "root", true)
	if ada.ID == "" || ada.ID == root.ID || ada.Token == "" {
		t.Fatalf("users %+v %+v", ada, root)
	}
	actor, err := a.Auth.TokenActor(t.Context(), root.Token)
	if err != nil || actor.UserID != root.ID || actor.Role != auth.RoleAdmin {
		t.Fatalf("root's token: %+v, %v", actor, err)
	}
	if _, _, err := a.Auth.Login(t.Context(), "ada", "ada-password", "127.0.0.1", "test"); err != nil {
		t.Fatalf("ada's password: %v", err)
	}

	// The client reaches the served app with the user's token.
	s, err := ada.Client.CreateSession(t.Context(), client.NewSession{Title: "kit"})
	if err != nil || s.Title != "kit" {
		t.Fatalf("create over HTTP: %+v, %v", s, err)
	}
	if _, err := client.New(a.URL).ListSessions(t.Context(), client.ListOptions{}); err == nil {
		t.Fatal("an anonymous client listed sessions")
	}
	if _, err := ada.Client.SendMessage(t.Context(), s.ID, "hello", "followup"); err != nil {
		t.Fatal(err)
	}
	a.WaitIdle(t, s.ID)
	page, err := ada.Client.Events(t.Context(), s.ID, -1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(page.Events); n == 0 || page.Events[n-1].Type != "turn/end" {
		t.Fatalf("after WaitIdle the log ends with %+v", page.Events[max(0, n-1):])
	}
	a.WaitIdle(t, "not-loaded") // returns at once
}
