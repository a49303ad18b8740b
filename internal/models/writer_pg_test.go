package models

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"harness/internal/session"
	"harness/internal/testkit/poll"
)

// The PostgreSQL commit announces every moved head on HeadsChannel, in
// notifications under the payload limit however many sessions a batch
// holds, and only once the batch committed.
func TestPGCommitAnnouncesHeads(t *testing.T) {
	t.Parallel()
	db := leaseDB(t)
	s := newTestStore(t, db, WriterOptions{MaxDelay: 50 * time.Millisecond})
	var mu sync.Mutex
	heads := map[string]int64{}
	var payloads []string
	connected := make(chan struct{})
	var once sync.Once
	go func() {
		_ = db.Listen(t.Context(), testLogger(t), []string{HeadsChannel}, ListenHandler{
			Notification: func(_, p string) {
				mu.Lock()
				defer mu.Unlock()
				payloads = append(payloads, p)
				for id, h := range ParseHeads(p) {
					heads[id] = h
				}
			},
			Connected: func() { once.Do(func() { close(connected) }) },
		})
	}()
	<-connected

	// More sessions in one batch than one notification carries.
	const n = notifyHeadsPer + 40
	ids := make([]string, n)
	for i := range ids {
		ids[i] = mustCreate(t, s, &Session{OwnerID: "o"}).ID
	}
	for i, id := range ids {
		for seq := range int64(i%3 + 1) {
			s.W.Enqueue(id, variedEvent(id, seq))
		}
	}
	if err := s.W.FlushAll(ctxTimeout(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, "every head announced", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(heads) == n
	}, poll.Within(10*time.Second))
	mu.Lock()
	defer mu.Unlock()
	for i, id := range ids {
		if want := int64(i % 3); heads[id] != want {
			t.Fatalf("session %d announced at head %d, want %d", i, heads[id], want)
		}
	}
	if len(payloads) < 2 {
		t.Fatalf("%d notifications for %d sessions, want them split", len(payloads), n)
	}
	for _, p := range payloads {
		if len(p) > NotifyPayloadMax || strings.Count(p, ",")+1 > notifyHeadsPer {
			t.Fatalf("a notification of %d bytes and %d heads", len(p), strings.Count(p, ",")+1)
		}
	}
}

// A stored group that changed under the writer (its n is not the one the
// writer extends) fails the PostgreSQL commit as a whole: nothing of the
// batch is stored, other sessions' parts included, and nobody is told of
// a head; once the group is as the writer remembers it, the batch lands.
func TestPGCommitRefusesAChangedGroup(t *testing.T) {
	t.Parallel()
	db := leaseDB(t)
	var reported errorLog
	s := newTestStore(t, db, WriterOptions{OnError: reported.add, Retries: 1, RetryBackoff: time.Millisecond})
	ctx := ctxTimeout(t, 20*time.Second)
	a := mustCreate(t, s, &Session{OwnerID: "o"})
	b := mustCreate(t, s, &Session{OwnerID: "o"})
	l := session.New(session.Header{ID: a.ID}, session.Options{})
	for range 3 {
		s.W.Enqueue(a.ID, delta(t, l, 1, "abc "))
	}
	if err := s.W.Flush(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	bump := func(by int) {
		t.Helper()
		if err := db.W.Exec(`UPDATE log_rows SET n = n + ? WHERE log_key = (SELECT log_key FROM sessions WHERE id = ?) AND seq = 0`, by, a.ID).Error; err != nil {
			t.Fatal(err)
		}
	}
	bump(100)
	s.W.Enqueue(a.ID, delta(t, l, 1, "def "))
	s.W.Enqueue(b.ID, variedEvent(b.ID, 0))
	err := s.W.Flush(ctx, a.ID)
	if err == nil || !strings.Contains(err.Error(), "stored group changed") {
		t.Fatalf("flush over a changed group: %v", err)
	}
	for _, id := range []string{a.ID, b.ID} {
		want := int64(2)
		if id == b.ID {
			want = -1
		}
		if h, err := s.Head(ctx, id); err != nil || h != want {
			t.Fatalf("head of %s = %d, %v; want %d (nothing of the batch stored)", id, h, err, want)
		}
	}
	bump(-100)
	if !poll.Wait(t, func() bool { return s.W.Flush(ctx, a.ID) == nil && s.W.Flush(ctx, b.ID) == nil }) {
		t.Fatal("the batch never landed once the group was restored")
	}
	evs, err := s.EventsSince(ctx, a.ID, -1, 0)
	if err != nil || len(evs) != 4 {
		t.Fatalf("session a: %d events, %v", len(evs), err)
	}
	if fmt.Sprint(reported.get(a.ID)) == "[]" {
		t.Fatal("the failure was not reported")
	}
}
