package main

import (
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"harness/client"
	"harness/internal/session"
	"harness/internal/testkit"
	"harness/internal/testkit/poll"
)

// watcher collects the events one client receives on a subscription.
type watcher struct {
	name string
	mu   sync.Mutex
	evs  []client.Event
	done chan struct{} // closed when the subscription ended
}

// watch subscribes to id on url from seq since+1 and collects its events
// until the subscription ends.
func watch(t *testing.T, name, url, tok, id string, since int64) *watcher {
	t.Helper()
	cn, err := client.New(url, client.WithToken(tok)).Dial(t.Context())
	if err != nil {
		t.Fatalf("%s: dial: %v", name, err)
	}
	t.Cleanup(func() { _ = cn.Close() })
	sub, err := cn.Subscribe(t.Context(), id, since)
	if err != nil {
		t.Fatalf("%s: subscribe: %v", name, err)
	}
	w := &watcher{name: name, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			select {
			case p, ok := <-sub.C:
				if !ok {
					return
				}
				if p.Event != nil {
					w.mu.Lock()
					w.evs = append(w.evs, *p.Event)
					w.mu.Unlock()
				}
			case <-cn.Done():
				return
			}
		}
	}()
	return w
}

func (w *watcher) events() []client.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.evs)
}

func (w *watcher) count(typ string) int {
	n := 0
	for _, e := range w.events() {
		if e.Type == typ {
			n++
		}
	}
	return n
}

// last is the seq of the last event received (-1 when none).
func (w *watcher) last() int64 {
	evs := w.events()
	if len(evs) == 0 {
		return -1
	}
	return evs[len(evs)-1].Seq
}

// Three replicas on one PostgreSQL database and one shared data directory.
// A session runs on replica A; a message sent on B's socket and one sent to
// C's REST API run there, and clients of all three follow it. A is
// SIGKILLed mid-stream: B or C takes the session over once its lease has
// lapsed, repairs the open turn once (interrupted) and runs the queued
// message. Every acknowledged message is in the log once, B's and C's
// streams are the stored log, and A's client resumes on C with since and
// gets the rest.
func TestReplicaFailover(t *testing.T) {
	t.Parallel()
	// A short TTL keeps the test quick; HARNESS_TEST_FAILOVER_TTL=8s
	// measures the default (docs/performance.md).
	ttl := 3 * time.Second
	if v := os.Getenv("HARNESS_TEST_FAILOVER_TTL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatal(err)
		}
		ttl = d
	}
	procs, tok := replicaProcs(t, 3, ttl)
	srvA, srvB, srvC := procs[0], procs[1], procs[2]
	ctx := t.Context()
	ca := client.New(srvA.URL, client.WithToken(tok))
	cc := client.New(srvC.URL, client.WithToken(tok))

	s, err := ca.CreateSession(ctx, client.NewSession{Title: "failover", Mode: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	wa := watch(t, "A", srvA.URL, tok, s.ID, -1)
	wb := watch(t, "B", srvB.URL, tok, s.ID, -1)
	wc := watch(t, "C", srvC.URL, tok, s.ID, -1)

	cnB, err := client.New(srvB.URL, client.WithToken(tok)).Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cnB.Close()
	m1, err := cnB.Followup(ctx, s.ID, "long: 2000")
	if err != nil {
		t.Fatalf("followup on B's socket: %v", err)
	}
	m2, err := cc.SendMessage(ctx, s.ID, "after the failover", "followup")
	if err != nil {
		t.Fatalf("REST message to C: %v", err)
	}
	poll.Eventually(t, "B's and C's clients to see A stream", func() bool {
		return wb.count("assistant/chunk") > 50 && wc.count("assistant/chunk") > 50
	}, poll.Within(30*time.Second))

	srvA.kill()
	killed := time.Now()
	<-wa.done
	cb := client.New(srvB.URL, client.WithToken(tok))
	var evs []client.Event
	if !poll.Wait(t, func() bool {
		evs = events(t, cb, s.ID)
		return countTurnEnds(evs, "interrupted") >= 1 && countTurnEnds(evs, "completed") >= 1
	}, poll.Within(60*time.Second)) {
		t.Fatalf("no takeover: %d events\nB:\n%s\nC:\n%s", len(evs), srvB.logs, srvC.logs)
	}
	// The repair's events carry the log's last time, so the takeover is
	// timed by the first event the new owner stamped: its turn's start.
	var resumedAt int64
	for i, e := range evs {
		if e.Type == "turn/end" && strings.Contains(string(e.Data), `"interrupted"`) {
			for _, f := range evs[i+1:] {
				if f.Type == "turn/start" {
					resumedAt = f.Time
					break
				}
			}
			break
		}
	}
	t.Logf("takeover: the queued turn started %v after the SIGKILL (lease TTL %v)", time.UnixMilli(resumedAt).Sub(killed).Round(time.Millisecond), ttl)

	if err := session.CheckInvariants(toSession(t, evs)); err != nil {
		t.Fatal(err)
	}
	if n := countTurnEnds(evs, "interrupted"); n != 1 {
		t.Fatalf("%d interrupted turn ends, want exactly one repair", n)
	}
	for _, m := range []string{m1, m2} {
		n := 0
		for _, e := range evs {
			if e.Type == "user/message" && strings.Contains(string(e.Data), `"id":"`+m+`"`) {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("acknowledged message %s is in the log %d times, want once", m, n)
		}
	}
	if !hasUserMessage(evs, m2) || countTurnEnds(evs, "completed") != 1 {
		t.Fatal("the queued message did not run after the takeover")
	}

	// A's client resumes on C from the last event it saw.
	wa2 := watch(t, "A resumed on C", srvC.URL, tok, s.ID, wa.last())
	head := evs[len(evs)-1].Seq
	for _, w := range []*watcher{wb, wc, wa2} {
		if !poll.Wait(t, func() bool { return w.last() >= head }, poll.Within(30*time.Second)) {
			t.Fatalf("%s's stream stopped at seq %d, the log's head is %d", w.name, w.last(), head)
		}
	}
	resumed := append(wa.events(), wa2.events()...)
	for _, w := range []struct {
		name string
		evs  []client.Event
	}{{"B", wb.events()}, {"C", wc.events()}, {"A then C", resumed}} {
		if err := testkit.SameStream(w.evs, evs); err != nil {
			t.Errorf("%s's stream is not the stored log: %v", w.name, err)
		}
	}

	var took int
	for name, logs := range map[string]string{"B": srvB.logs.String(), "C": srvC.logs.String()} {
		for _, bad := range []string{"seq mismatch", "stored head", "session write failed"} {
			if strings.Contains(logs, bad) {
				t.Fatalf("server %s logged %q:\n%s", name, bad, logs)
			}
		}
		took += strings.Count(logs, "took over a session")
	}
	if took != 1 {
		t.Fatalf("%d takeovers logged, want 1\nB:\n%s\nC:\n%s", took, srvB.logs, srvC.logs)
	}
}

// A server is killed mid-turn with a message queued, and another starts on
// its PostgreSQL database at once, while the dead server's lease is still
// held. A command to the new server (one that changes nothing: the mode
// it has; a read never loads) loads the session as soon as the lease
// lapses, before the takeover loop (a longer TTL here: it looks less
// often) finds it orphaned: that load repairs the turn and runs the queued
// message, as a takeover does; it used to leave it waiting for the next
// input.
func TestLoadOfALapsedLeaseRunsTheQueue(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns servers; skipped with -short")
	}
	if os.Getenv(pgDSNEnv) == "" {
		t.Skip("!!! SKIPPING: leases need PostgreSQL; set " + pgDSNEnv + " (.ci/run does) !!!")
	}
	t.Parallel()
	b := backends(t)[1].make(t)
	dir := t.TempDir()
	tok := b.token(t, dir)
	srv := startServer(t, dir, b.serverEnv()...)
	ctx := t.Context()
	c := client.New(srv.URL, client.WithToken(tok))
	s, err := c.CreateSession(ctx, client.NewSession{Title: "queued at the kill", Mode: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	var acked []string
	for _, p := range []string{"long: 5000", "queued before the kill"} {
		id, err := c.SendMessage(ctx, s.ID, p, "followup")
		if err != nil {
			t.Fatal(err)
		}
		acked = append(acked, id)
	}
	poll.Eventually(t, "the turn to stream", func() bool {
		return slices.ContainsFunc(events(t, c, s.ID), func(e client.Event) bool { return e.Type == "assistant/chunk" })
	}, poll.Within(30*time.Second))
	srv.kill()

	srv = startServer(t, dir, append(slices.Clone(b.env), "HARNESS_LEASE_TTL=8s")...)
	c = client.New(srv.URL, client.WithToken(tok))
	var evs []client.Event
	auto := "auto"
	if !poll.Wait(t, func() bool {
		_, _ = c.UpdateSession(ctx, s.ID, client.Patch{Mode: &auto}) // loads it once the lease lapsed
		evs = events(t, c, s.ID)
		return countTurnEnds(evs, "interrupted") == 1 && countTurnEnds(evs, "completed") == 1 && hasUserMessage(evs, acked[1])
	}, poll.Within(30*time.Second)) {
		var types []string
		for _, e := range evs {
			if e.Type != "assistant/chunk" {
				types = append(types, e.Type)
			}
		}
		t.Fatalf("the queued message did not run: %v\n%s", types, srv.logs)
	}
	if err := session.CheckInvariants(toSession(t, evs)); err != nil {
		t.Fatal(err)
	}
	for _, m := range acked {
		if !inInbox(evs, m) {
			t.Fatalf("acknowledged message %s is not in the log", m)
		}
	}
	if strings.Contains(srv.logs.String(), "took over a session") {
		t.Log("the takeover loop came first this time")
	}
}
