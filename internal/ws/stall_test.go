package ws_test

import (
	"context"
	"testing"
	"time"

	"harness/client"
	"harness/internal/testkit/poll"
	"harness/internal/ws"
)

// A subscriber that stops reading during a stream, far below the queue's
// byte bound, is cut with 4008 once its socket took nothing for
// StallTimeout while its queue grew; its connection is freed, and a
// reading subscriber of the same session gets every event. The write
// timeout and the keepalive, shorter here, would drop it first without a
// code; while its queue grows they leave it to the stall rule. (They are
// long enough that a loaded machine pausing the stream does not make the
// session look quiet: TestStallWatch covers that rule.)
func TestStalledSubscriberIsCut(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{demoDelay: time.Millisecond, ws: ws.Options{
		StallTimeout: 2 * time.Second, WriteTimeout: time.Second, PingInterval: time.Second, SocketBuffer: 16 << 10,
	}})
	id := e.session(client.NewSession{Provider: "demo"})
	tok, err := e.app.Auth.CreateToken(t.Context(), "alice", "stalled")
	if err != nil {
		t.Fatal(err)
	}
	stalled, err := smallBufferClient(e.url, tok).Dial(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// Buffer 1: the client stops reading its socket once one push waits.
	sub, err := stalled.Subscribe(t.Context(), id, -1, client.SubscribeOptions{Buffer: 1})
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	followed := make(chan []client.Event, 1)
	go func() {
		var got []client.Event
		err := e.alice.Follow(ctx, id, -1, func(p client.Push) error {
			if p.Ch == client.ChEvent {
				got = append(got, *p.Event)
				if turnEnded(1)(p) {
					return errDone
				}
			}
			return nil
		}, client.FollowOptions{EveryEvent: true})
		if err != errDone {
			t.Errorf("follow: %v", err)
		}
		followed <- got
	}()
	if _, err := e.alice.SendMessage(t.Context(), id, "long: 8000", "followup"); err != nil {
		t.Fatal(err)
	}

	poll.Eventually(t, "the stalled subscriber to be cut", func() bool { return e.app.Hub.Stats().SlowClosed != 0 },
		poll.Within(90*time.Second))
	for range sub.C { // read now: the close frame follows what was on the wire
	}
	<-stalled.Done()
	if st := client.CloseStatus(stalled.Err()); st != client.CloseSlowConsumer {
		t.Fatalf("close status %d (%v), want %d", st, stalled.Err(), client.CloseSlowConsumer)
	}

	got := <-followed
	e.waitIdle(id)
	sameEvents(t, got, e.fullLog(id))
	if n := e.app.Hub.Stats().SlowClosed; n != 1 {
		t.Fatalf("%d cuts, want 1 (the reading subscriber was cut too?)", n)
	}
	poll.Eventually(t, "the cut connection to be freed", func() bool { return e.app.Hub.Stats().Conns == 0 },
		poll.Within(30*time.Second))
}
