package app_test

import (
	"testing"
	"time"

	"harness/client"
	"harness/internal/app"
	"harness/internal/config"
	"harness/internal/testkit/apptest"
	"harness/internal/testkit/poll"
)

// listed is id's status in the session list of c.
func listed(t *testing.T, c *client.Client, id string) string {
	t.Helper()
	l, err := c.ListSessions(t.Context(), client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range l.Sessions {
		if r.ID == id {
			return r.Status
		}
	}
	t.Fatalf("session %s not listed", id)
	return ""
}

// A replica that started after a session's owner notified its status
// (so it never heard it) still lists the session as the owner runs it: it
// asks the owner. Later changes reach its list from the owner's
// notifications. Reading the session there never loads it there.
func TestReplicaListsTheStatusItWasNotTold(t *testing.T) {
	t.Parallel()
	dsn, _ := pgSchema(t)
	a := replica(t, dsn, "replica-a", time.Minute)
	u := a.User(t, "alice", true)
	ctx := t.Context()
	s, err := u.Client.CreateSession(ctx, client.NewSession{Title: "status", Mode: "ask"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := u.Client.SendMessage(ctx, s.ID, "run: echo approve me", "followup"); err != nil {
		t.Fatal(err)
	}
	var approval string
	poll.Eventually(t, "the owner to ask for an approval", func() bool {
		got, err := u.Client.GetSession(ctx, s.ID)
		if err != nil || len(got.Interactions) != 1 || got.Status != "running" {
			return false
		}
		approval = got.Interactions[0].ID
		return true
	})

	b := replica(t, dsn, "replica-b", time.Minute)
	cb := client.New(b.URL, client.WithToken(u.Token))
	if st := listed(t, cb, s.ID); st != "running" {
		t.Fatalf("replica-b lists the session %s, want running (the owner's)", st)
	}
	got, err := cb.GetSession(ctx, s.ID)
	if err != nil || got.Status != "running" || len(got.Interactions) != 1 {
		t.Fatalf("replica-b reads %+v, %v; want the owner's running session with its approval", got, err)
	}
	if _, here := b.Manager.Lookup(s.ID); here {
		t.Fatal("replica-b loaded a session replica-a runs")
	}
	if err := cb.Approve(ctx, s.ID, approval, true); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, "replica-b to list the session idle", func() bool { return listed(t, cb, s.ID) == "idle" })
}

// A read of a session no replica runs is answered from the stored log,
// by any replica, without taking its lease.
func TestReplicaReadNeverTakesTheLease(t *testing.T) {
	t.Parallel()
	dsn, _ := pgSchema(t)
	a := apptest.StartApp(t, func(c *config.Config) {
		c.DBDriver, c.DBDSN = "postgres", dsn
		c.Replica = config.Replica{ID: "replica-a", LeaseTTL: time.Minute}
		c.IdleUnload = 20 * time.Millisecond
	}, app.Options{Getenv: replicaEnv})
	if err := a.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	b := replica(t, dsn, "replica-b", time.Minute)
	u := a.User(t, "alice", true)
	ctx := t.Context()
	s, err := u.Client.CreateSession(ctx, client.NewSession{Title: "nobody runs it", Mode: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := u.Client.SendMessage(ctx, s.ID, "hello", "followup"); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, "replica-a to unload the idle session", func() bool {
		_, here := a.Manager.Lookup(s.ID)
		return !here
	})
	for _, r := range []*apptest.App{a, b} {
		got, err := client.New(r.URL, client.WithToken(u.Token)).GetSession(ctx, s.ID)
		if err != nil || got.Status != "idle" || got.Head < 1 || got.Context.Tokens == 0 {
			t.Fatalf("read through %s: %+v, %v; want the stored idle session with its context", r.URL, got, err)
		}
		if _, here := r.Manager.Lookup(s.ID); here {
			t.Fatalf("the read through %s loaded the session", r.URL)
		}
	}
}
