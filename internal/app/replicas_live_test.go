package app_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"harness/client"
	"harness/internal/driver"
	"harness/internal/models"
	"harness/internal/testkit"
	"harness/internal/testkit/apptest"
	"harness/internal/testkit/poll"
)

// stream collects what one replica's subscriber receives.
type stream struct {
	name     string
	events   []client.Event
	statuses []string
}

// follow subscribes to id through app's WebSocket and collects pushes
// until the stream holds every event up to head (read when done reports
// true).
func follow(t *testing.T, name string, a *apptest.App, token, id string) (*stream, *client.Conn, *client.Subscription) {
	t.Helper()
	cn, err := client.New(a.URL, client.WithToken(token)).Dial(t.Context())
	if err != nil {
		t.Fatalf("%s: dial: %v", name, err)
	}
	t.Cleanup(func() { _ = cn.Close() })
	sub, err := cn.Subscribe(t.Context(), id, -1)
	if err != nil {
		t.Fatalf("%s: subscribe: %v", name, err)
	}
	return &stream{name: name}, cn, sub
}

// drain reads sub into s until it holds seq head, or fails after a while.
func (s *stream) drain(t *testing.T, sub *client.Subscription, head int64) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for len(s.events) == 0 || s.events[len(s.events)-1].Seq < head {
		select {
		case p, ok := <-sub.C:
			if !ok {
				t.Fatalf("%s: subscription closed at %d events", s.name, len(s.events))
			}
			switch {
			case p.Event != nil:
				s.events = append(s.events, *p.Event)
			case p.Status != "":
				s.statuses = append(s.statuses, p.Status)
			}
		case <-timeout:
			t.Fatalf("%s: %d events after 30 s, want up to seq %d", s.name, len(s.events), head)
		}
	}
}

// One session runs on replica A; clients of A, B and C follow it. A
// command sent on B's WebSocket and a REST command sent to C run on A
// (their answers are A's), and every replica's subscriber receives the
// same events as the stored log, in order, without gap or duplicate, and
// the agent's status changes too.
func TestReplicasServeEveryClient(t *testing.T) {
	t.Parallel()
	dsn, _ := pgSchema(t)
	ttl := 3 * time.Second
	a := replicaWith(t, dsn, "replica-a", ttl, time.Millisecond)
	b := replicaWith(t, dsn, "replica-b", ttl, time.Millisecond)
	c := replicaWith(t, dsn, "replica-c", ttl, time.Millisecond)
	ctx := t.Context()
	u := a.User(t, "alice", true)

	s, err := u.Client.CreateSession(ctx, client.NewSession{Title: "replicated", Mode: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := a.Manager.Lookup(s.ID); !ok {
		t.Fatal("the session was created on replica-a but its agent is not there")
	}
	sa, _, subA := follow(t, "replica-a", a, u.Token, s.ID)
	sb, cnB, subB := follow(t, "replica-b", b, u.Token, s.ID)
	sc, _, subC := follow(t, "replica-c", c, u.Token, s.ID)

	id, err := cnB.Followup(ctx, s.ID, "long: 300")
	if err != nil || id == "" {
		t.Fatalf("followup on replica-b's socket: id %q, %v; want it run by replica-a", id, err)
	}
	if _, err := client.New(c.URL, client.WithToken(u.Token)).SendMessage(ctx, s.ID, "hello through replica-c", "followup"); err != nil {
		t.Fatalf("REST message to replica-c: %v; want it forwarded to replica-a", err)
	}
	for _, r := range []*apptest.App{b, c} {
		if _, ok := r.Manager.Lookup(s.ID); ok {
			t.Fatal("a non-owner loaded the agent")
		}
	}
	ag, _ := a.Manager.Lookup(s.ID)
	poll.Eventually(t, "both turns to run on replica-a", func() bool {
		q := ag.Queue()
		return ag.Status() == driver.StatusIdle && len(q.Queued) == 0 && ag.Log().State().LastTurn >= 2
	}, poll.Within(60*time.Second))
	stored, err := u.Client.Events(ctx, s.ID, -1, 0)
	if err != nil {
		t.Fatal(err)
	}
	head := stored.Events[len(stored.Events)-1].Seq
	for _, st := range []struct {
		s   *stream
		sub *client.Subscription
	}{{sa, subA}, {sb, subB}, {sc, subC}} {
		st.s.drain(t, st.sub, head)
		if err := testkit.SameStream(st.s.events, stored.Events); err != nil {
			t.Errorf("%s's stream differs from the stored log: %v", st.s.name, err)
		}
	}
	for _, st := range []*stream{sb, sc} {
		if !strings.Contains(strings.Join(st.statuses, ","), "running") {
			t.Errorf("%s's subscriber saw statuses %v, want the owner's running", st.name, st.statuses)
		}
	}
	var sawB, sawC bool
	for _, e := range stored.Events {
		sawB = sawB || bytes.Contains(e.Data, []byte("long: 300"))
		sawC = sawC || bytes.Contains(e.Data, []byte("hello through replica-c"))
	}
	if !sawB || !sawC {
		t.Fatalf("stored log: forwarded message from B %v, from C %v", sawB, sawC)
	}

	// Deleted on A: the subscribers on B and C are told the session is
	// gone (session/closed), as A's are.
	if err := u.Client.DeleteSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	for name, sub := range map[string]*client.Subscription{"replica-a": subA, "replica-b": subB, "replica-c": subC} {
		closed := false
		for !closed {
			select {
			case p, ok := <-sub.C:
				closed = !ok || p.Ch == client.ChClosed
			case <-time.After(10 * time.Second):
				t.Fatalf("%s's subscriber was not told the session was deleted", name)
			}
		}
	}
}

// A replica does not take a session whose workspace it cannot reach (not
// on the shared volume there): loading fails with ErrUnreachable and the
// lease stays free for a replica that can.
func TestReplicaLeavesUnreachableWorkspace(t *testing.T) {
	t.Parallel()
	dsn, _ := pgSchema(t)
	a := replica(t, dsn, "replica-a", time.Minute)
	ctx := t.Context()
	row := models.Session{OwnerID: "u", Workspace: filepath.Join(t.TempDir(), "not-mounted-here")}
	if err := a.Store.CreateSession(ctx, &row); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Manager.Get(ctx, row.ID); !errors.Is(err, driver.ErrUnreachable) {
		t.Fatalf("load: %v, want ErrUnreachable", err)
	}
	if _, _, held, err := a.Leases.Holder(ctx, row.ID); err != nil || held {
		t.Fatalf("lease held %v (%v) after the refused load, want free", held, err)
	}
	if err := os.MkdirAll(row.Workspace, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Manager.Get(ctx, row.ID); err != nil {
		t.Fatalf("load once the workspace is there: %v", err)
	}
}
