package ws_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"harness/client"
	"harness/internal/testkit/poll"
	"harness/internal/ws"
)

// A subscriber that reconnects with since in the middle of a stream gets
// exactly the missing events, while appends race the replay: each of many
// resubscriptions, at different points of a fast stream, continues the
// previous one with no gap and no duplicate.
func TestResumeWithSinceWhileAppending(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{demoDelay: 500 * time.Microsecond})
	id := e.session(client.NewSession{Provider: "demo"})
	writer := e.dial(e.alice)
	if _, err := writer.Followup(t.Context(), id, "long: 600"); err != nil {
		t.Fatal(err)
	}

	var got []client.Event
	last := int64(-1)
	for hop := 0; ; hop++ {
		cn := e.dial(e.alice)
		sub := subscribe(t, cn, id, last)
		// Take a different number of events on each hop, then drop the
		// connection mid-stream (or at the end of the turn).
		take := 7 + hop*13
		n := 0
		ps := collect(t, sub, func(p client.Push) bool {
			if p.Ch == client.ChEvent {
				n++
			}
			return turnEnded(1)(p) || n >= take
		})
		_ = cn.Close()
		evs := eventsOf(ps)
		contiguous(t, evs, last+1)
		got = append(got, evs...)
		if len(evs) > 0 {
			last = evs[len(evs)-1].Seq
		}
		if len(ps) > 0 && turnEnded(1)(ps[len(ps)-1]) {
			if hop < 3 {
				t.Fatalf("the stream ended after %d hops; it should outlast several", hop+1)
			}
			break
		}
	}
	e.waitIdle(id)
	sameEvents(t, got, e.fullLog(id))
}

// smallBufferClient dials with a tiny TCP receive buffer, so a client that
// does not read pushes back on the server quickly.
func smallBufferClient(base string, tok string) *client.Client {
	d := &net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	hc := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	return client.New(base, client.WithToken(tok), client.WithHTTPClient(hc))
}

// A subscriber that reads nothing is cut with 4008 and its reason, and
// resumes losslessly with since.
func TestSlowConsumerIsCutAndResumes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{demoDelay: -1, ws: ws.Options{SendBytes: 16 << 10, HoldBytes: 16 << 10, SocketBuffer: 16 << 10}})
	id := e.session(client.NewSession{Provider: "demo"})
	tok, err := e.app.Auth.CreateToken(t.Context(), "alice", "slow")
	if err != nil {
		t.Fatal(err)
	}
	slowC := smallBufferClient(e.url, tok)
	slow, err := slowC.Dial(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	sub, err := slow.Subscribe(t.Context(), id, -1, client.SubscribeOptions{Buffer: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.alice.SendMessage(t.Context(), id, "long: 4000", "followup"); err != nil {
		t.Fatal(err)
	}
	// Read nothing until the server gives up on us.
	poll.Eventually(t, "the slow consumer to be cut", func() bool { return e.app.Hub.Stats().SlowClosed != 0 },
		poll.Within(30*time.Second))
	var got []client.Event
	for p := range sub.C {
		if p.Ch == client.ChEvent {
			got = append(got, *p.Event)
		}
	}
	<-slow.Done()
	if st := client.CloseStatus(slow.Err()); st != client.CloseSlowConsumer {
		t.Fatalf("close status %d (%v), want %d", st, slow.Err(), client.CloseSlowConsumer)
	}
	if !client.IsSlowConsumer(slow.Err()) {
		t.Fatal("IsSlowConsumer is false")
	}
	contiguous(t, got, 0)
	last := int64(-1)
	if len(got) > 0 {
		last = got[len(got)-1].Seq
	}

	// Resume with since on a normal connection and read to the end.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var rest []client.Event
	err = e.alice.Follow(ctx, id, last, func(p client.Push) error {
		if p.Ch == client.ChEvent {
			rest = append(rest, *p.Event)
			if turnEnded(1)(p) {
				return errDone
			}
		}
		return nil
	}, client.FollowOptions{EveryEvent: true})
	if err != errDone {
		t.Fatalf("follow: %v", err)
	}
	contiguous(t, rest, last+1)
	e.waitIdle(id)
	sameEvents(t, append(got, rest...), e.fullLog(id))
}

type doneErr struct{}

func (doneErr) Error() string { return "done" }

var errDone error = doneErr{}

// Follow rides over a slow-consumer cut: its handler is slow at first, the
// server cuts the socket, Follow reconnects with since, and the handler
// still sees every event exactly once, in order.
func TestFollowSurvivesSlowConsumerCut(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{demoDelay: -1, ws: ws.Options{SendBytes: 16 << 10, HoldBytes: 16 << 10, SocketBuffer: 16 << 10}})
	id := e.session(client.NewSession{Provider: "demo"})
	tok, err := e.app.Auth.CreateToken(t.Context(), "alice", "follow")
	if err != nil {
		t.Fatal(err)
	}
	c := smallBufferClient(e.url, tok)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	var got []client.Event
	reconnects := 0
	started := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		errc <- c.Follow(ctx, id, -1, func(p client.Push) error {
			switch {
			case p.Ch == client.ChReplayDone && len(got) == 0:
				close(started)
			case p.Ch == client.ChEvent:
				got = append(got, *p.Event)
				// Stall until the server has given up on this socket.
				poll.Wait(t, func() bool { return reconnects != 0 || e.app.Hub.Stats().SlowClosed != 0 }, poll.Every(time.Millisecond))
				if turnEnded(1)(p) {
					return errDone
				}
			}
			return nil
		}, client.FollowOptions{MinBackoff: time.Millisecond, EveryEvent: true, OnReconnect: func(since int64, cause error) {
			reconnects++
			if !client.IsSlowConsumer(cause) {
				t.Errorf("reconnect cause %v, want the slow-consumer close", cause)
			}
		}})
	}()
	<-started
	if _, err := e.alice.SendMessage(t.Context(), id, "long: 4000", "followup"); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != errDone {
		t.Fatalf("follow: %v", err)
	}
	if reconnects == 0 {
		t.Fatal("Follow never reconnected")
	}
	e.waitIdle(id)
	sameEvents(t, got, e.fullLog(id))
}

// Follow ends when its session does: the handler sees session/closed, and
// Follow returns an error saying why (the resubscription is refused
// not_found). Cancelling ctx ends it too, and the handler is never called
// after Follow returned (-race checks the plain counter).
func TestFollowEndsWithItsSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	id := e.session(client.NewSession{Provider: "demo"})
	closed := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		errc <- e.alice.Follow(t.Context(), id, -1, func(p client.Push) error {
			switch p.Ch {
			case client.ChReplayDone:
				if err := e.alice.DeleteSession(t.Context(), id); err != nil {
					t.Errorf("delete: %v", err)
				}
			case client.ChClosed:
				close(closed)
			}
			return nil
		}, client.FollowOptions{MinBackoff: time.Millisecond})
	}()
	select {
	case err := <-errc:
		if client.CodeOf(err) != "not_found" {
			t.Fatalf("Follow of a deleted session returned %v, want not_found", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Follow did not return after its session was deleted")
	}
	select {
	case <-closed:
	default:
		t.Fatal("the handler never saw session/closed")
	}

	live := e.session(client.NewSession{Provider: "demo"})
	ctx, cancel := context.WithCancel(t.Context())
	calls := 0
	go func() {
		errc <- e.alice.Follow(ctx, live, -1, func(p client.Push) error {
			calls++
			if p.Ch == client.ChReplayDone {
				cancel()
			}
			return nil
		})
	}()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Follow after cancel returned %v", err)
	}
	if calls == 0 {
		t.Fatal("the handler was never called")
	}
}
