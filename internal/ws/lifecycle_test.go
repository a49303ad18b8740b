package ws_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"harness/client"
	"harness/internal/session"
	"harness/internal/ws"
)

// pushOn waits for a push on the connection's general channel.
func pushOn(t *testing.T, cn *client.Conn, match func(client.Push) bool) client.Push {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case p, ok := <-cn.Pushes():
			if !ok {
				t.Fatalf("connection ended: %v", cn.Err())
			}
			if match(p) {
				return p
			}
		case <-timeout:
			t.Fatal("timed out waiting for a push")
		}
	}
}

func changed(id string, pred func(client.Push) bool) func(client.Push) bool {
	return func(p client.Push) bool {
		return p.Ch == client.ChSessionsChanged && p.Session == id && pred(p)
	}
}

// The sidebar channel reports creation, renames, status flips, sharing and
// deletion to exactly the users who can see the session.
func TestSessionsChangedReachesTheRightUsers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	ac, bc := e.dial(e.alice), e.dial(e.bob)
	ctx := t.Context()

	s, err := e.alice.CreateSession(ctx, client.NewSession{Provider: "demo", Title: "first"})
	if err != nil {
		t.Fatal(err)
	}
	p := pushOn(t, ac, changed(s.ID, func(p client.Push) bool { return p.Row != nil }))
	if p.Row.Title != "first" || p.Row.Role != "owner" || p.Row.Status != client.StatusIdle {
		t.Fatalf("created row %+v", p.Row)
	}
	title := "renamed"
	if _, err := e.alice.UpdateSession(ctx, s.ID, client.Patch{Title: &title}); err != nil {
		t.Fatal(err)
	}
	pushOn(t, ac, changed(s.ID, func(p client.Push) bool { return p.Row != nil && p.Row.Title == "renamed" }))
	if _, err := e.alice.SendMessage(ctx, s.ID, "hello", "followup"); err != nil {
		t.Fatal(err)
	}
	pushOn(t, ac, changed(s.ID, func(p client.Push) bool { return p.Row != nil && p.Row.Status == client.StatusRunning }))
	pushOn(t, ac, changed(s.ID, func(p client.Push) bool { return p.Row != nil && p.Row.Status == client.StatusIdle }))

	// Bob sees it once he is a member, with his role, and loses it again.
	if err := e.alice.AddMember(ctx, s.ID, "bob", "viewer"); err != nil {
		t.Fatal(err)
	}
	p = pushOn(t, bc, changed(s.ID, func(p client.Push) bool { return p.Row != nil }))
	if p.Row.Role != "viewer" {
		t.Fatalf("bob's row %+v, want role viewer", p.Row)
	}
	if err := e.alice.RemoveMember(ctx, s.ID, "bob"); err != nil {
		t.Fatal(err)
	}
	pushOn(t, bc, changed(s.ID, func(p client.Push) bool { return p.Deleted }))

	if err := e.alice.DeleteSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	pushOn(t, ac, changed(s.ID, func(p client.Push) bool { return p.Deleted }))

	// Bob never saw anything about a session after losing it, nor about
	// a private one: his next push is about his own session.
	mine, err := e.bob.CreateSession(ctx, client.NewSession{})
	if err != nil {
		t.Fatal(err)
	}
	p = pushOn(t, bc, func(p client.Push) bool { return p.Ch == client.ChSessionsChanged })
	if p.Session != mine.ID {
		t.Fatalf("bob got a change about %s, want only %s", p.Session, mine.ID)
	}
}

// Deleting a followed session closes the subscription with a notice; the
// session is gone for new subscribers; the workspace is removed.
func TestDeleteWhileSubscribed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{demoDelay: 5 * time.Millisecond})
	id := e.session(client.NewSession{Provider: "demo"})
	cn := e.dial(e.alice)
	sub := subscribe(t, cn, id, -1)
	if _, err := cn.Followup(t.Context(), id, "long: 500"); err != nil {
		t.Fatal(err)
	}
	collect(t, sub, func(p client.Push) bool { return p.Ch == client.ChEvent && p.Event.Type == "assistant/chunk" })
	if err := e.alice.DeleteSession(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	ps := collect(t, sub, func(p client.Push) bool { return p.Ch == client.ChClosed })
	if last := ps[len(ps)-1]; last.Ch != client.ChClosed || last.Reason != "unloaded" {
		t.Fatalf("last push %+v, want session/closed", last)
	}
	if _, ok := <-sub.C; ok {
		t.Fatal("the subscription channel stays open after session/closed")
	}
	if _, err := cn.Subscribe(t.Context(), id, -1); client.CodeOf(err) != "not_found" {
		t.Fatalf("subscribe after delete: %v, want not_found", err)
	}
	if err := cn.Ping(t.Context()); err != nil {
		t.Fatalf("connection broken after delete: %v", err)
	}
	if _, ok := e.app.Manager.Lookup(id); ok {
		t.Fatal("the deleted session's agent is still loaded")
	}
}

// A share-link viewer follows the live transcript but cannot drive it; a
// revoked link's subscription is closed at the next keepalive.
func TestShareLinkViewer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{ws: ws.Options{PingInterval: 100 * time.Millisecond}})
	id := e.session(client.NewSession{Provider: "demo"})
	link, err := e.alice.CreateShareLink(t.Context(), id, nil)
	if err != nil {
		t.Fatal(err)
	}
	guest := client.New(e.url, client.WithShareToken(link.Token))
	gc := e.dial(guest)
	sub := subscribe(t, gc, id, -1)
	if sub.Role != "viewer" {
		t.Fatalf("share role %q, want viewer", sub.Role)
	}
	for _, try := range []func() error{
		func() error { _, err := gc.Followup(t.Context(), id, "hi"); return err },
		func() error { return gc.Cancel(t.Context(), id, false) },
		func() error { return gc.SetMode(t.Context(), id, "auto") },
	} {
		if err := try(); client.CodeOf(err) != "unauthorized" {
			t.Fatalf("share link drove the session: %v, want unauthorized", err)
		}
	}
	if _, err := e.alice.SendMessage(t.Context(), id, "hello", "followup"); err != nil {
		t.Fatal(err)
	}
	collect(t, sub, turnEnded(1))
	if err := e.alice.RevokeShareLink(t.Context(), id, link.ID); err != nil {
		t.Fatal(err)
	}
	ps := collect(t, sub, func(p client.Push) bool { return p.Ch == client.ChClosed })
	if last := ps[len(ps)-1]; last.Ch != client.ChClosed || last.Reason != "unauthorized" {
		t.Fatalf("after revocation: %+v, want session/closed unauthorized", last)
	}
	// A new socket with the revoked link is refused.
	if _, err := guest.Dial(t.Context()); client.CodeOf(err) != "unauthorized" {
		t.Fatalf("dial with a revoked link: %v", err)
	}
}

// seqProjector renders an event as its type, seq and viewer class.
type seqProjector struct {
	ev session.Event
}

func seqProjections(string, *session.Log, int64) ws.Projector { return &seqProjector{} }

func (p *seqProjector) Apply(ev session.Event) error { p.ev = ev; return nil }

func (p *seqProjector) Fragment(canAnswer bool, viewer string) (string, error) {
	return fmt.Sprintf("<p>%s #%d %v %s</p>", p.ev.Type, p.ev.Seq, canAnswer, viewer), nil
}

// Subscribers that ask for HTML get the renderer's fragment with each
// event; others get none.
func TestRenderedSubscriptions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{projections: seqProjections})
	id := e.session(client.NewSession{Provider: "demo"})
	if _, err := e.alice.SendMessage(t.Context(), id, "hello", "followup"); err != nil {
		t.Fatal(err)
	}
	e.waitIdle(id)
	cn := e.dial(e.alice)
	html, err := cn.Subscribe(t.Context(), id, -1, client.SubscribeOptions{RenderHTML: true})
	if err != nil {
		t.Fatal(err)
	}
	plain := subscribe(t, e.dial(e.alice), id, -1)
	for _, p := range collect(t, html, func(p client.Push) bool { return p.Ch == client.ChReplayDone }) {
		if p.Ch == client.ChEvent && p.HTML != fmt.Sprintf("<p>%s #%d true %s</p>", p.Event.Type, p.Event.Seq, e.aliceID) {
			t.Fatalf("event %d html %q", p.Event.Seq, p.HTML)
		}
	}
	for _, p := range collect(t, plain, func(p client.Push) bool { return p.Ch == client.ChReplayDone }) {
		if p.HTML != "" {
			t.Fatalf("a plain subscriber got html %q", p.HTML)
		}
	}
}

// Shutting the app down closes every socket with 1001.
func TestShutdownClosesSocketsGoingAway(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	id := e.session(client.NewSession{Provider: "demo"})
	cn, err := e.alice.Dial(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	sub := subscribe(t, cn, id, -1)
	collect(t, sub, func(p client.Push) bool { return p.Ch == client.ChReplayDone })
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := e.app.Hub.Close(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-cn.Done():
	case <-ctx.Done():
		t.Fatal("the socket stayed open")
	}
	if st := client.CloseStatus(cn.Err()); st != int(websocket.StatusGoingAway) {
		t.Fatalf("close %v, want 1001", cn.Err())
	}
	if _, err := e.alice.Dial(t.Context()); err == nil || !strings.Contains(err.Error(), "503") && client.CodeOf(err) != "unavailable" {
		t.Fatalf("dial after shutdown: %v, want unavailable", err)
	}
}
