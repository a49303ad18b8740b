package ws_test

import (
	"strings"
	"testing"

	"harness/client"
)

// A followup streams to two subscribers of the same session identically,
// and what they got is exactly the stored log.
func TestFollowupStreamsIdenticallyToTwoSubscribers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	id := e.session(client.NewSession{Provider: "demo"})
	c1, c2 := e.dial(e.alice), e.dial(e.alice)
	s1, s2 := subscribe(t, c1, id, -1), subscribe(t, c2, id, -1)

	msgID, err := c1.Followup(t.Context(), id, "long: 50")
	if err != nil {
		t.Fatal(err)
	}
	p1 := collect(t, s1, turnEnded(1))
	p2 := collect(t, s2, turnEnded(1))
	ev1, ev2 := eventsOf(p1), eventsOf(p2)
	sameEvents(t, ev1, ev2)
	contiguous(t, ev1, 0)
	e.waitIdle(id)
	sameEvents(t, ev1, e.fullLog(id))

	var chunks int
	var user *client.Message
	for _, ev := range ev1 {
		switch ev.Type {
		case "assistant/chunk":
			if strings.Contains(string(ev.Data), `"text-delta"`) {
				chunks++
			}
		case "user/message":
			if m := decode[client.Message](t, ev.Data); m.Source.Kind == "user" {
				user = &m
			}
		}
	}
	if chunks != 50 {
		t.Errorf("%d text chunks, want 50", chunks)
	}
	if user == nil || user.ID != msgID || user.Source.Kind != "user" || user.Source.UserID != e.aliceID || user.Source.Name != "alice" || user.Source.ClientID == "" {
		t.Errorf("user message %+v: want id %s sent by alice with a client id", user, msgID)
	}
	// Both saw the running/idle flips and the replay marker.
	for i, ps := range [][]client.Push{p1, p2} {
		var done, running bool
		for _, p := range ps {
			done = done || p.Ch == client.ChReplayDone
			running = running || (p.Ch == client.ChStatus && p.Status == client.StatusRunning)
		}
		if !done || !running {
			t.Errorf("subscriber %d: replay/done %v, status running %v", i+1, done, running)
		}
	}
}

// The subscription starts with the replay, replay/done{head}, and the
// current state; the answer names the role.
func TestSubscribeReplaysThenSnapshot(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	id := e.session(client.NewSession{Provider: "demo", Title: "replayed"})
	if _, err := e.alice.SendMessage(t.Context(), id, "hello", "followup"); err != nil {
		t.Fatal(err)
	}
	e.waitIdle(id)
	log := e.fullLog(id)

	cn := e.dial(e.alice)
	sub := subscribe(t, cn, id, 2)
	if sub.Role != "owner" {
		t.Errorf("role %q, want owner", sub.Role)
	}
	ps := collect(t, sub, func(p client.Push) bool { return p.Ch == client.ChReplayDone })
	sameEvents(t, eventsOf(ps), log[3:])
	last := ps[len(ps)-1]
	if last.Head == nil || *last.Head != log[len(log)-1].Seq {
		t.Errorf("replay/done head %v, want %d", last.Head, log[len(log)-1].Seq)
	}
	var status, inbox bool
	for _, p := range ps {
		status = status || p.Ch == client.ChStatus && p.Status == client.StatusIdle
		inbox = inbox || p.Ch == client.ChInbox && p.Queue != nil && len(p.Queue.Queued) == 0
	}
	if !status || !inbox {
		t.Errorf("snapshot: status %v, inbox %v", status, inbox)
	}

	// since at the head replays nothing; beyond the head is refused.
	head := log[len(log)-1].Seq
	cn2 := e.dial(e.alice)
	sub2 := subscribe(t, cn2, id, head)
	ps2 := collect(t, sub2, func(p client.Push) bool { return p.Ch == client.ChReplayDone })
	if n := len(eventsOf(ps2)); n != 0 {
		t.Errorf("since=head replayed %d events", n)
	}
	if _, err := e.dial(e.alice).Subscribe(t.Context(), id, head+1); client.CodeOf(err) != "bad_request" {
		t.Errorf("since beyond head: %v, want bad_request", err)
	}
	if _, err := cn2.Subscribe(t.Context(), id, -1); client.CodeOf(err) != "conflict" {
		t.Errorf("second subscribe on one connection: %v, want conflict", err)
	}
}
