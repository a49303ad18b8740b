package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"harness/client"
	"harness/internal/session"
	"harness/internal/testkit/poll"
)

// queuedWithKey counts the messages the log queued under clientID.
func queuedWithKey(evs []client.Event, clientID string) int {
	n := 0
	for _, e := range evs {
		if e.Type == "agent/inbox/spliced" {
			n += strings.Count(string(e.Data), `"clientId":"`+clientID+`"`)
		}
	}
	return n
}

// enteredWithKey counts the messages under clientID that entered a turn.
func enteredWithKey(evs []client.Event, clientID string) int {
	n := 0
	for _, e := range evs {
		if e.Type == "user/message" && strings.Contains(string(e.Data), `"clientId":"`+clientID+`"`) {
			n++
		}
	}
	return n
}

// userIDOf returns the sender of the user message id.
func userIDOf(t *testing.T, evs []client.Event, id string) string {
	t.Helper()
	for _, e := range evs {
		if e.Type != "user/message" || !strings.Contains(string(e.Data), `"id":"`+id+`"`) {
			continue
		}
		var m struct {
			Source struct {
				UserID string `json:"userId"`
			} `json:"source"`
		}
		if err := json.Unmarshal(e.Data, &m); err != nil {
			t.Fatal(err)
		}
		return m.Source.UserID
	}
	t.Fatalf("no user message %s", id)
	return ""
}

// Sends are idempotent from outside: the same clientId over REST, a
// WebSocket request re-sent with the same id on a new connection (its
// answer was lost), and either again after a restart store one message
// and answer its id; the same key with other content is a conflict. On
// SQLite and on PostgreSQL.
func TestSendsStoreOnce(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testSendsStoreOnce)
}

func testSendsStoreOnce(t *testing.T, b backend) {
	dir := t.TempDir()
	token := b.token(t, dir)
	srv := startServer(t, dir, b.env...)
	ctx := context.Background()
	c := client.New(srv.URL, client.WithToken(token))
	s, err := c.CreateSession(ctx, client.NewSession{})
	if err != nil {
		t.Fatal(err)
	}

	rest := client.NewKey()
	first, err := c.SendMessageKey(ctx, s.ID, "hello", "followup", rest)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := c.SendMessageKey(ctx, s.ID, "hello", "followup", rest); err != nil || again != first {
		t.Fatalf("REST repeat: %q, %v; want %q", again, err, first)
	}
	if _, err := c.SendMessageKey(ctx, s.ID, "something else", "followup", rest); client.CodeOf(err) != "conflict" {
		t.Fatalf("REST key with other content: %v, want conflict", err)
	}

	wsKey := "r-" + client.NewKey()
	send := func() (string, error) {
		cn, err := c.Dial(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer cn.Close()
		r, err := cn.Do(ctx, client.Request{ID: wsKey, Op: "followup", Session: s.ID, Content: "again please"})
		return r.MessageID, err
	}
	wsFirst, err := send()
	if err != nil {
		t.Fatal(err)
	}
	if id, err := send(); err != nil || id != wsFirst {
		t.Fatalf("WebSocket re-send on a new connection: %q, %v; want %q", id, err, wsFirst)
	}
	poll.Eventually(t, "both turns to end", func() bool { return countTurnEnds(events(t, c, s.ID), "") == 2 })

	_ = srv.cmd.Process.Signal(syscall.SIGTERM)
	if _, ok := srv.exitErr(20 * time.Second); !ok {
		t.Fatal("server did not stop")
	}
	srv = startServer(t, dir, b.env...)
	c = client.New(srv.URL, client.WithToken(token))
	if again, err := c.SendMessageKey(ctx, s.ID, "hello", "followup", rest); err != nil || again != first {
		t.Fatalf("REST repeat after a restart: %q, %v; want %q", again, err, first)
	}
	if id, err := send(); err != nil || id != wsFirst {
		t.Fatalf("WebSocket re-send after a restart: %q, %v; want %q", id, err, wsFirst)
	}
	evs := events(t, c, s.ID)
	if n, m := queuedWithKey(evs, rest), queuedWithKey(evs, wsKey); n != 1 || m != 1 {
		t.Fatalf("stored %d messages under the REST key and %d under the WebSocket one, want 1 each", n, m)
	}
	if n := countTurnEnds(evs, ""); n != 2 {
		t.Fatalf("%d turns ran, want 2", n)
	}
}

// On a full disk a send is refused with nothing kept and readiness says
// why; the client retries with the same key, and once space is back
// readiness recovers by itself and exactly one message is stored and run.
func TestFullDiskSendsRefusedThenStoredOnce(t *testing.T) {
	t.Parallel()
	dir := mountTmpfs(t, "64m")
	data := filepath.Join(dir, "data")
	token := newToken(t, data)
	srv := startServer(t, data)
	ctx := context.Background()
	c := client.New(srv.URL, client.WithToken(token))
	s, err := c.CreateSession(ctx, client.NewSession{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SendMessage(ctx, s.ID, "warm up", "followup"); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, "the first turn to end", func() bool { return countTurnEnds(events(t, c, s.ID), "") == 1 })
	before := len(events(t, c, s.ID))

	// Fill the disk, then keep sending one message under one key, as a
	// retrying client does, until the store has found out.
	filler := filepath.Join(dir, "filler")
	_ = exec.Command("dd", "if=/dev/zero", "of="+filler, "bs=1M", "count=100").Run()
	key := client.NewKey()
	var refused error
	fit := false
	poll.Eventually(t, "a send to be refused", func() bool {
		id, err := c.SendMessageKey(ctx, s.ID, "long: 200", "followup", key)
		if err == nil {
			t.Logf("a send fit in free pages: %s", id)
			fit = true
			return false
		}
		refused = err
		return true
	}, poll.Within(30*time.Second))
	// A send that fit was kept: a repeat of its key is not told nothing
	// was kept.
	said := "nothing was kept"
	if fit {
		said = "applied once"
	}
	if client.CodeOf(refused) != "unavailable" || !strings.Contains(refused.Error(), "disk is full") || !strings.Contains(refused.Error(), said) {
		t.Fatalf("unclear refusal on a full disk: %v", refused)
	}
	poll.Eventually(t, "readiness to say the disk is full", func() bool {
		res, err := httpClient.Get(srv.URL + "/readyz")
		if err != nil {
			return false
		}
		defer res.Body.Close()
		b := make([]byte, 256)
		n, _ := res.Body.Read(b)
		return res.StatusCode == 503 && strings.Contains(string(b[:n]), "disk full")
	}, poll.Within(10*time.Second))
	for range 3 {
		if _, err := c.SendMessageKey(ctx, s.ID, "long: 200", "followup", key); client.CodeOf(err) != "unavailable" {
			t.Fatalf("a retry on a full disk: %v, want unavailable", err)
		}
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, "readiness to come back by itself", func() bool {
		code, err := httpGet(srv.URL + "/readyz")
		return err == nil && code == 200
	}, poll.Within(30*time.Second))
	id, err := c.SendMessageKey(ctx, s.ID, "long: 200", "followup", key)
	if err != nil {
		t.Fatalf("the retry once space is back: %v", err)
	}
	if again, err := c.SendMessageKey(ctx, s.ID, "long: 200", "followup", key); err != nil || again != id {
		t.Fatalf("a further retry: %q, %v; want %q", again, err, id)
	}
	poll.Eventually(t, "the message's turn to end", func() bool { return countTurnEnds(events(t, c, s.ID), "") == 2 }, poll.Within(30*time.Second))

	// What the log holds survives a restart: one message under the key,
	// run once, and the refused attempts left no message behind.
	_ = srv.cmd.Process.Signal(syscall.SIGTERM)
	if _, ok := srv.exitErr(20 * time.Second); !ok {
		t.Fatal("server did not stop")
	}
	srv = startServer(t, data)
	c = client.New(srv.URL, client.WithToken(token))
	evs := events(t, c, s.ID)
	// The refused attempt may be in the log as queued and taken back
	// (outcome not_stored): it never ran, and the key names the one that
	// did.
	keys, err := session.SentKeys(toSession(t, evs), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := keys[session.SendKey{UserID: userIDOf(t, evs, id), ClientID: key}]; got.MessageID != id {
		t.Fatalf("the key names %q, want %q", got.MessageID, id)
	}
	if n := enteredWithKey(evs, key); n != 1 || !hasUserMessage(evs, id) || countTurnEnds(evs, "") != 2 || len(evs) <= before {
		t.Fatalf("the message ran %d times (%d turns), want once", n, countTurnEnds(evs, ""))
	}
	for i, ev := range evs {
		if ev.Seq != int64(i) {
			t.Fatalf("gap in the log at %d", i)
		}
	}
}
