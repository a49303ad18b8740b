package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"harness/client"
	"harness/internal/session"
	"harness/internal/testkit/poll"
)

// Another process holds the database's write lock for 30 s (issue 26)
// while a reply streams. Meanwhile sends are refused as unavailable with
// nothing kept, the client retrying under one key; /readyz answers 503 and
// /healthz 200; the stream's events wait in the writer. Once the lock is
// gone readiness comes back by itself, the retry is stored once and runs,
// the streamed turn reaches the store complete, and after a SIGKILL and a
// restart every event the server had served is there with its seq.
//
// With -short the lock is held 8 s, or until the refusals were seen: the
// writer waits out its busy timeout on each of its retries first.
func TestDatabaseLockedForThirtySeconds(t *testing.T) {
	t.Parallel()
	hold := 30 * time.Second
	if testing.Short() {
		hold = 8 * time.Second
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "harness.db")
	token := newToken(t, dir)
	srv := startServer(t, dir)
	ctx := context.Background()
	c := client.New(srv.URL, client.WithToken(token))
	s, err := c.CreateSession(ctx, client.NewSession{Title: "locked by another process"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SendMessage(ctx, s.ID, "hello", "followup"); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, "the first turn to end", func() bool { return countTurnEnds(events(t, c, s.ID), "completed") == 1 })
	streamed, err := c.SendMessage(ctx, s.ID, "long: 2000", "followup")
	if err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, "the reply to stream", func() bool {
		return slices.ContainsFunc(events(t, c, s.ID), func(e client.Event) bool { return e.Type == "assistant/chunk" })
	}, poll.Within(30*time.Second))

	lock := lockFromAnotherProcess(t, db)
	locked := time.Now()
	t.Logf("%s holds the write lock", lock.who)
	defer lock.release()
	// When readiness first fails, and how (for the log).
	firstUnready := make(chan string, 1)
	go func() {
		for t.Context().Err() == nil && time.Since(locked) < 2*time.Minute {
			if code, body := getBody(t, srv.URL+"/readyz"); code != 200 {
				firstUnready <- fmt.Sprintf("%v after the lock: %d %q", time.Since(locked).Round(time.Millisecond), code, body)
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()

	// The stream goes on, served from memory, its events queued.
	served := len(events(t, c, s.ID))
	poll.Eventually(t, "the stream to go on under the lock", func() bool {
		return len(events(t, c, s.ID)) > served && writerPending(t, srv.URL) > 0
	}, poll.Within(30*time.Second))

	// A client sends under one key; its answer seems lost, so it sends
	// the same request again while the first still waits. Both are
	// refused: the store cannot make the message durable.
	key := client.NewKey()
	const text = "sent while the database is locked"
	type answer struct {
		id  string
		err error
	}
	answers := make(chan answer, 2)
	for range 2 {
		go func() {
			id, err := c.SendMessageKey(ctx, s.ID, text, "followup", key)
			answers <- answer{id, err}
		}()
	}
	var firstRefusal time.Duration
	for range 2 {
		a := <-answers
		if firstRefusal == 0 {
			firstRefusal = time.Since(locked)
		}
		if a.err == nil {
			t.Fatalf("a send was acknowledged (%s) while another process held the write lock", a.id)
		}
		if client.CodeOf(a.err) != "unavailable" || !strings.Contains(a.err.Error(), "does not take writes: another process holds its write lock") {
			t.Fatalf("unclear refusal under the lock: %v", a.err)
		}
		t.Logf("refused: %v", a.err)
	}
	t.Logf("first send refused %v after the lock was taken", firstRefusal.Round(time.Millisecond))
	// The client keeps retrying with the same key, refused at once. The
	// first attempt was either taken back (nothing was kept) or, when the
	// streamed turn ended meanwhile, claimed by the next turn: then the
	// key names it and a retry must not say nothing was kept.
	var kept bool
	for i := range 3 {
		_, err := c.SendMessageKey(ctx, s.ID, text, "followup", key)
		if client.CodeOf(err) != "unavailable" || !strings.Contains(err.Error(), "does not take writes: another process holds its write lock") {
			t.Fatalf("a retry under the lock: %v, want unavailable", err)
		}
		k := !strings.Contains(err.Error(), "nothing was kept")
		if k && !strings.Contains(err.Error(), "applied once") {
			t.Fatalf("a retry under the lock: %v: neither nothing kept nor applied once", err)
		}
		if i == 0 {
			kept = k
			t.Logf("a retry under the lock: %v", err)
		} else if k != kept {
			t.Fatalf("retries under the lock disagree on whether the message was kept: %v", err)
		}
	}
	// Sends were refused: the writer knows, and readiness says why.
	if code, body := getBody(t, srv.URL+"/readyz"); code != 503 || body != "database does not take writes: locked by another process" {
		t.Fatalf("/readyz under the lock after a refused send: %d %q", code, body)
	}
	t.Logf("/readyz said so %v after the lock was taken", time.Since(locked).Round(time.Millisecond))
	select {
	case first := <-firstUnready:
		t.Logf("/readyz first failed %s", first)
	case <-time.After(10 * time.Second):
	}
	if code, err := httpGet(srv.URL + "/healthz"); err != nil || code != 200 {
		t.Fatalf("/healthz under the lock: %d %v", code, err)
	}
	if n := writerPending(t, srv.URL); n == 0 {
		t.Fatal("no events wait for the locked database")
	}

	if rest := hold - time.Since(locked); rest > 0 {
		time.Sleep(rest)
	}
	lock.release()
	held := time.Since(locked)
	released := time.Now()
	poll.Eventually(t, "readiness to come back by itself", func() bool {
		code, _ := getBody(t, srv.URL+"/readyz")
		return code == 200
	}, poll.Within(60*time.Second))
	t.Logf("lock held %v; /readyz 200 again %v after the release", held.Round(time.Millisecond), time.Since(released).Round(time.Millisecond))

	// The retry is stored once and runs; the streamed turn completes.
	id, err := c.SendMessageKey(ctx, s.ID, text, "followup", key)
	if err != nil {
		t.Fatalf("the retry after the release: %v", err)
	}
	if again, err := c.SendMessageKey(ctx, s.ID, text, "followup", key); err != nil || again != id {
		t.Fatalf("a further retry: %q, %v; want %q", again, err, id)
	}
	poll.Eventually(t, "the streamed turn and the retried message's to end", func() bool {
		return countTurnEnds(events(t, c, s.ID), "") == 3
	}, poll.Within(120*time.Second))
	evs := events(t, c, s.ID)
	waitStored(t, db, s.ID, evs[len(evs)-1].Seq)
	checkWhole(t, evs)
	if n := countTurnEnds(evs, "completed"); n != 3 {
		t.Fatalf("%d turns completed, want 3:\n%s", n, dumpTypes(evs))
	}
	if !hasUserMessage(evs, streamed) || !hasUserMessage(evs, id) {
		t.Fatal("the streamed or the retried message is not in the log")
	}
	keys, err := session.SentKeys(toSession(t, evs), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := keys[session.SendKey{UserID: userIDOf(t, evs, id), ClientID: key}]; got.MessageID != id {
		t.Fatalf("the key names %q, want %q", got.MessageID, id)
	}
	if n := enteredWithKey(evs, key); n != 1 {
		t.Fatalf("the message under the key entered %d turns, want 1", n)
	}
	// Kept, the first attempt is the message; taken back, the retry
	// after the release queued it again.
	if n, want := queuedWithKey(evs, key), map[bool]int{true: 1, false: 2}[kept]; n != want {
		for _, e := range evs {
			if strings.HasPrefix(e.Type, "agent/inbox") || e.Type == "user/message" || e.Type == "turn/start" || e.Type == "turn/end" {
				t.Logf("%d %s %s", e.Seq, e.Type, e.Data)
			}
		}
		t.Fatalf("%d messages queued under the key, want %d (kept under the lock: %v)\n%s", n, want, kept, srv.logs)
	}

	// Everything served was stored: a crash loses none of it.
	srv.kill()
	srv = startServer(t, dir)
	c = client.New(srv.URL, client.WithToken(token))
	after := events(t, c, s.ID)
	sameEvents(t, evs, after)
	// The next message continues the seqs.
	if _, err := c.SendMessage(ctx, s.ID, "after the restart", "followup"); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, "the next turn to end", func() bool { return countTurnEnds(events(t, c, s.ID), "") == 4 }, poll.Within(30*time.Second))
	later := events(t, c, s.ID)
	checkWhole(t, later)
	sameEvents(t, evs, later[:min(len(evs), len(later))])
}

// checkWhole checks a log is contiguous from seq 0 and keeps the log's
// invariants.
func checkWhole(t *testing.T, evs []client.Event) {
	t.Helper()
	for i, e := range evs {
		if e.Seq != int64(i) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
	}
	if err := session.CheckInvariants(toSession(t, evs)); err != nil {
		t.Fatal(err)
	}
}

// sameEvents checks that every event of want is in got, at its seq, with
// the same type and data.
func sameEvents(t *testing.T, want, got []client.Event) {
	t.Helper()
	at := map[int64]client.Event{}
	for _, e := range got {
		at[e.Seq] = e
	}
	for _, e := range want {
		if e.From != 0 {
			continue // a run of deltas folded into one push: not one stored event
		}
		g, ok := at[e.Seq]
		if !ok {
			t.Fatalf("served event seq %d (%s) is gone (%d events now)", e.Seq, e.Type, len(got))
		}
		if g.Type != e.Type || !sameJSON(g.Data, e.Data) {
			t.Fatalf("seq %d is now %s %s; it was served as %s %s", e.Seq, g.Type, g.Data, e.Type, e.Data)
		}
	}
}

// getBody GETs url and returns the status and the start of the body.
func getBody(t *testing.T, url string) (int, string) {
	t.Helper()
	res, err := httpClient.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer res.Body.Close()
	b := make([]byte, 512)
	n, _ := res.Body.Read(b)
	return res.StatusCode, string(b[:n])
}
