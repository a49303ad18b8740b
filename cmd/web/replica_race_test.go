package main

import (
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"harness/client"
	"harness/internal/session"
	"harness/internal/testkit/poll"
)

// replicaProcs starts n replicas (child processes) on one fresh PostgreSQL
// schema and one data directory, with a short lease TTL, and returns them
// with an admin token; extraEnv is added to every replica's environment.
func replicaProcs(t *testing.T, n int, ttl time.Duration, extraEnv ...string) ([]*serverProc, string) {
	t.Helper()
	rs := newReplicaSet(t, n, ttl, extraEnv...)
	return rs.procs, rs.tok
}

// Two processes race for the leases of idle sessions: the replica that
// created them shut down (releasing their leases), then each session gets
// a message through B and one through C at once. Exactly one replica takes
// each lease and runs the agent; the other's message is forwarded to it,
// so both are in the log once, with no write conflict anywhere.
func TestReplicaProcessesRaceForALease(t *testing.T) {
	t.Parallel()
	procs, tok := replicaProcs(t, 3, 5*time.Second)
	a := procs[0]
	ca := client.New(a.URL, client.WithToken(tok))
	cb := client.New(procs[1].URL, client.WithToken(tok))
	cc := client.New(procs[2].URL, client.WithToken(tok))
	ctx := t.Context()
	var sessions []string
	for range 6 {
		s, err := ca.CreateSession(ctx, client.NewSession{Title: "race", Mode: "auto"})
		if err != nil {
			t.Fatal(err)
		}
		sessions = append(sessions, s.ID)
	}
	if err := a.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err, exited := a.exitErr(30 * time.Second); !exited || err != nil {
		t.Fatalf("replica-a did not shut down cleanly: exited %v, %v\n%s", exited, err, a.logs)
	}
	for _, id := range sessions {
		var wg sync.WaitGroup
		ids := make([]string, 2)
		errs := make([]error, 2)
		for i, c := range []*client.Client{cb, cc} {
			wg.Go(func() { ids[i], errs[i] = c.SendMessage(ctx, id, "racing "+string(rune('B'+i)), "followup") })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("session %s, message %d: %v", id, i, err)
			}
		}
		var evs []client.Event
		poll.Eventually(t, "both messages to run", func() bool {
			evs = events(t, cb, id)
			return countTurnEnds(evs, "completed") == 2
		}, poll.Within(30*time.Second))
		if err := session.CheckInvariants(toSession(t, evs)); err != nil {
			t.Fatal(err)
		}
		for _, m := range ids {
			n := 0
			for _, e := range evs {
				if e.Type == "user/message" && strings.Contains(string(e.Data), `"id":"`+m+`"`) {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("message %s is in the log %d times, want once", m, n)
			}
		}
	}
	for _, p := range procs[1:] {
		for _, bad := range []string{"seq mismatch", "stored head", "session write failed", "lease lost"} {
			if strings.Contains(p.logs.String(), bad) {
				t.Fatalf("a replica logged %q:\n%s", bad, p.logs)
			}
		}
	}
}

// An owner that pauses (SIGSTOP) mid-turn loses its lease; another replica
// takes the session over. When the old owner wakes (SIGCONT) its writer
// still holds events of the old term: the database refuses them (stale
// epoch), the old owner stops its agent and says so, and the stored log
// holds nothing of the old owner after the takeover.
func TestReplicaPausedOwnerIsFenced(t *testing.T) {
	t.Parallel()
	procs, tok := replicaProcs(t, 2, 2*time.Second)
	a, b := procs[0], procs[1]
	ca := client.New(a.URL, client.WithToken(tok))
	cb := client.New(b.URL, client.WithToken(tok))
	ctx := t.Context()
	s, err := ca.CreateSession(ctx, client.NewSession{Title: "paused owner", Mode: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ca.SendMessage(ctx, s.ID, "long: 3000", "followup"); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, "A to stream", func() bool {
		return slices.ContainsFunc(events(t, cb, s.ID), func(e client.Event) bool { return e.Type == "assistant/chunk" })
	}, poll.Within(30*time.Second))

	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := true
	defer func() {
		if stopped {
			_ = a.cmd.Process.Signal(syscall.SIGCONT)
		}
	}()
	var evs []client.Event
	poll.Eventually(t, "B to take the session over", func() bool {
		evs = events(t, cb, s.ID)
		return countTurnEnds(evs, "interrupted") == 1
	}, poll.Within(30*time.Second))
	takeover := evs[len(evs)-1].Seq

	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	stopped = false
	poll.Eventually(t, "the woken owner to find its lease gone", func() bool {
		return strings.Contains(a.logs.String(), "session lease lost") || strings.Contains(a.logs.String(), "lease moved")
	}, poll.Within(30*time.Second))
	// What A still streamed after waking was refused; B's log goes on.
	if _, err := cb.SendMessage(ctx, s.ID, "after the pause", "followup"); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, "B to run the next message", func() bool {
		evs = events(t, cb, s.ID)
		return countTurnEnds(evs, "completed") == 1
	}, poll.Within(30*time.Second))
	if err := session.CheckInvariants(toSession(t, evs)); err != nil {
		t.Fatal(err)
	}
	for _, e := range evs[takeover+1:] {
		if e.Type == "assistant/chunk" && strings.Contains(string(e.Data), `"turn":1`) {
			t.Fatalf("the paused owner's chunk of turn 1 was stored after the takeover at seq %d", e.Seq)
		}
	}
}

// Sends are idempotent across replicas: a message sent with a clientId
// through replica A (the owner) and again, same key and content, through
// replica B (a non-owner: it forwards to A) is one stored message, and
// both answers name it; the key with other content is a conflict through
// B too. Once A is killed and B has taken the session over, the key still
// names the message (B rebuilt its keys from the log).
func TestReplicaSendsStoreOnce(t *testing.T) {
	t.Parallel()
	procs, tok := replicaProcs(t, 2, time.Second)
	a, b := procs[0], procs[1]
	ca := client.New(a.URL, client.WithToken(tok))
	cb := client.New(b.URL, client.WithToken(tok))
	ctx := t.Context()
	s, err := ca.CreateSession(ctx, client.NewSession{Title: "keys across replicas", Mode: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	key := client.NewKey()
	first, err := ca.SendMessageKey(ctx, s.ID, "hello from anywhere", "followup", key)
	if err != nil {
		t.Fatal(err)
	}
	again, err := cb.SendMessageKey(ctx, s.ID, "hello from anywhere", "followup", key)
	if err != nil || again != first {
		t.Fatalf("the same key through replica-b: %q, %v; want %q", again, err, first)
	}
	if _, err := cb.SendMessageKey(ctx, s.ID, "something else", "followup", key); client.CodeOf(err) != "conflict" {
		t.Fatalf("the key with other content through replica-b: %v, want conflict", err)
	}
	var evs []client.Event
	poll.Eventually(t, "the message's turn to end", func() bool {
		evs = events(t, cb, s.ID)
		return countTurnEnds(evs, "") == 1
	}, poll.Within(30*time.Second))
	if n := queuedWithKey(evs, key); n != 1 {
		t.Fatalf("%d messages stored under the key, want 1", n)
	}

	a.kill()
	poll.Eventually(t, "replica-b to answer the key once it owns the session", func() bool {
		id, err := cb.SendMessageKey(ctx, s.ID, "hello from anywhere", "followup", key)
		if err != nil {
			return false // forwarded to the dead owner until its lease lapses
		}
		if id != first {
			t.Fatalf("the key after the takeover: %q, want %q", id, first)
		}
		return true
	}, poll.Within(30*time.Second))
	evs = events(t, cb, s.ID)
	if n, m := queuedWithKey(evs, key), enteredWithKey(evs, key); n != 1 || m != 1 {
		t.Fatalf("after the takeover: %d messages queued and %d run under the key, want 1 each", n, m)
	}
	if err := session.CheckInvariants(toSession(t, evs)); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"seq mismatch", "stored head", "session write failed"} {
		if strings.Contains(b.logs.String(), bad) {
			t.Fatalf("replica-b logged %q:\n%s", bad, b.logs)
		}
	}
}
