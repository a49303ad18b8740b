package models

import (
	"errors"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"harness/internal/session"
)

// leaseDB opens a fresh PostgreSQL schema, or skips loudly without one.
func leaseDB(t *testing.T) *DB {
	t.Helper()
	dsn := os.Getenv(pgDSNEnv)
	if dsn == "" {
		t.Skip("!!! SKIPPING: session leases need PostgreSQL; set " + pgDSNEnv + " (.ci/run does) !!!")
	}
	return openPostgresTest(t, dsn)
}

func registered(t *testing.T, db *DB, id string, ttl time.Duration) *Leases {
	t.Helper()
	l, err := NewLeases(db, id, ttl, ttl)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Register(t.Context(), id+".example:8080", false); err != nil {
		t.Fatal(err)
	}
	return l
}

// expire ends a session's lease now, as if its holder had paused past it.
func expire(t *testing.T, db *DB, id string) {
	t.Helper()
	if err := db.W.Exec(`UPDATE session_leases SET expires_at = now() - interval '1 second' WHERE session_id = ?`, id).Error; err != nil {
		t.Fatal(err)
	}
}

func TestLeasesNeedPostgres(t *testing.T) {
	t.Parallel()
	if _, err := NewLeases(openSQLiteTest(t), "r1", time.Second, time.Second); err == nil {
		t.Fatal("leases on SQLite")
	}
}

func TestLeaseIdentityFirst(t *testing.T) {
	t.Parallel()
	db := leaseDB(t)
	s := newTestStore(t, db, WriterOptions{})
	sess := mustCreate(t, s, &Session{OwnerID: "u"})
	l, err := NewLeases(db, "r1", time.Minute, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(t.Context(), sess.ID); !errors.Is(err, ErrNotRegistered) {
		t.Fatalf("acquire before registering: %v, want ErrNotRegistered", err)
	}
	if err := l.Register(t.Context(), "a:1", false); err != nil {
		t.Fatal(err)
	}
	// A second live process with the same id is refused.
	twin, _ := NewLeases(db, "r1", time.Minute, time.Minute)
	if err := twin.Register(t.Context(), "b:1", false); !errors.Is(err, ErrReplicaInUse) {
		t.Fatalf("second register: %v, want ErrReplicaInUse", err)
	}
	if _, err := l.Acquire(t.Context(), "no-such-session"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("acquire of an unknown session: %v, want ErrNotFound", err)
	}
}

// Replicas racing for one lease: exactly one wins, the others learn who.
func TestLeaseRace(t *testing.T) {
	t.Parallel()
	db := leaseDB(t)
	s := newTestStore(t, db, WriterOptions{})
	const n = 8
	var ls []*Leases
	for i := range n {
		ls = append(ls, registered(t, db, "r"+string(rune('a'+i)), time.Minute))
	}
	for range 10 {
		sess := mustCreate(t, s, &Session{OwnerID: "u"})
		var wg sync.WaitGroup
		epochs := make([]int64, n)
		errs := make([]error, n)
		for i, l := range ls {
			wg.Go(func() { epochs[i], errs[i] = l.Acquire(t.Context(), sess.ID) })
		}
		wg.Wait()
		winner := -1
		for i := range ls {
			if errs[i] == nil {
				if winner >= 0 {
					t.Fatalf("two winners: %s and %s", ls[winner].ID(), ls[i].ID())
				}
				winner = i
			}
		}
		if winner < 0 {
			t.Fatalf("no winner: %v", errs)
		}
		for i, err := range errs {
			var held *LeaseHeldError
			if i != winner && (!errors.As(err, &held) || held.Owner != ls[winner].ID() || held.Addr != ls[winner].ID()+".example:8080") {
				t.Fatalf("loser %s: %v, want held by %s", ls[i].ID(), err, ls[winner].ID())
			}
		}
		if epochs[winner] != 1 {
			t.Fatalf("first epoch %d, want 1", epochs[winner])
		}
	}
}

// A takes the lease and appends; after the lease expires B takes it over
// and appends; A's next batch is refused by the database as fenced, and
// the stored log holds only B's appends after the takeover. Renewal tells
// A it lost the lease; release keeps the epoch growing.
func TestLeaseFencesStaleAppends(t *testing.T) {
	t.Parallel()
	db := leaseDB(t)
	var mu sync.Mutex
	var reported []error
	sa := newTestStore(t, db, WriterOptions{OnError: func(_ string, err error) {
		mu.Lock()
		reported = append(reported, err)
		mu.Unlock()
	}})
	sb := newTestStore(t, db, WriterOptions{})
	la := registered(t, db, "ra", time.Hour)
	lb := registered(t, db, "rb", time.Hour)
	sess := mustCreate(t, sa, &Session{OwnerID: "u"})
	ctx := t.Context()

	epochA, err := la.Acquire(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	sa.Own(sess.ID, epochA)
	for seq := range int64(5) {
		sa.Enqueue(sess.ID, variedEvent(sess.ID, seq))
	}
	if err := sa.Flush(ctx, sess.ID); err != nil {
		t.Fatalf("owner's appends: %v", err)
	}
	if kept, err := la.Renew(ctx, map[string]int64{sess.ID: epochA}); err != nil || !kept[sess.ID] {
		t.Fatalf("renew by the owner: %v %v", kept, err)
	}
	if _, err := lb.Acquire(ctx, sess.ID); !errors.Is(err, ErrLeaseHeld) {
		t.Fatalf("B took a live lease: %v", err)
	}

	expire(t, db, sess.ID)
	epochB, err := lb.Acquire(ctx, sess.ID)
	if err != nil {
		t.Fatalf("takeover after expiry: %v", err)
	}
	if epochB <= epochA {
		t.Fatalf("takeover epoch %d, want > %d", epochB, epochA)
	}
	sb.Own(sess.ID, epochB)
	for seq := int64(5); seq < 8; seq++ {
		sb.Enqueue(sess.ID, ev(seq, session.TypeAssistantChunk, map[string]any{"by": "B"}))
	}
	if err := sb.Flush(ctx, sess.ID); err != nil {
		t.Fatalf("new owner's appends: %v", err)
	}

	// A wakes up believing it still owns the session; its next batch
	// continues the head it knows (seq 5) and carries the stale epoch.
	sa.Enqueue(sess.ID, ev(5, session.TypeAssistantChunk, map[string]any{"by": "A"}))
	err = sa.Flush(ctx, sess.ID)
	var fe *FencedError
	if !errors.As(err, &fe) || fe.Epoch != epochA || fe.Stored != epochB {
		t.Fatalf("stale owner's flush: %v, want a FencedError (epoch %d, stored %d)", err, epochA, epochB)
	}
	mu.Lock()
	if len(reported) != 1 || !errors.Is(reported[0], ErrFenced) {
		t.Fatalf("writer reported %v, want one fencing error", reported)
	}
	mu.Unlock()
	if kept, err := la.Renew(ctx, map[string]int64{sess.ID: epochA}); err != nil || kept[sess.ID] {
		t.Fatalf("A renewed a lease it lost: %v %v", kept, err)
	}

	got, err := sb.EventsSince(ctx, sess.ID, 4, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("after the takeover: %d events, want B's 3", len(got))
	}
	for _, e := range got {
		if string(e.Data) != `{"by":"B"}` {
			t.Fatalf("seq %d after the takeover is %s, want B's", e.Seq, e.Data)
		}
	}

	// Release keeps the epoch, so the next holder's is higher still.
	if err := lb.Release(ctx, sess.ID, epochB); err != nil {
		t.Fatal(err)
	}
	if li, ok, err := lb.Lease(ctx, sess.ID); err != nil || !ok || li.Owner != "" || li.Epoch != epochB {
		t.Fatalf("after release: %+v %v %v", li, ok, err)
	}
	if e, err := la.Acquire(ctx, sess.ID); err != nil || e != epochB+1 {
		t.Fatalf("acquire after release: %d %v, want %d", e, err, epochB+1)
	}
}

// Disown drops what a stopped owner still appends, and Own starts afresh.
func TestWriterDisown(t *testing.T) {
	t.Parallel()
	db := leaseDB(t)
	s := newTestStore(t, db, WriterOptions{})
	l := registered(t, db, "r", time.Hour)
	sess := mustCreate(t, s, &Session{OwnerID: "u"})
	ctx := t.Context()
	epoch, err := l.Acquire(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	s.Own(sess.ID, epoch)
	s.Enqueue(sess.ID, variedEvent(sess.ID, 0))
	if err := s.Flush(ctx, sess.ID); err != nil {
		t.Fatal(err)
	}
	s.Disown(sess.ID, epoch)
	s.Enqueue(sess.ID, variedEvent(sess.ID, 1))
	if err := s.Flush(ctx, sess.ID); !errors.Is(err, ErrFenced) {
		t.Fatalf("flush after disown: %v, want ErrFenced", err)
	}
	if h := sessionHead(t, s, sess.ID); h != 0 {
		t.Fatalf("head %d after disown, want 0", h)
	}
	epoch, err = l.Acquire(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	s.Own(sess.ID, epoch)
	s.Enqueue(sess.ID, variedEvent(sess.ID, 1))
	if err := s.Flush(ctx, sess.ID); err != nil {
		t.Fatalf("flush in the new term: %v", err)
	}
	if h := sessionHead(t, s, sess.ID); h != 1 {
		t.Fatalf("head %d, want 1", h)
	}
}

func sessionHead(t *testing.T, s *Store, id string) int64 {
	t.Helper()
	row, err := s.GetSession(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return row.Head
}

// An owner paused in the middle of a commit holds the session row's lock:
// the server ends its transaction after IdleTxTimeout, so the takeover
// waits for that, not for the owner to wake (it might never).
func TestPausedTransactionDoesNotBlockTakeover(t *testing.T) {
	t.Parallel()
	dsn := os.Getenv(pgDSNEnv)
	if dsn == "" {
		t.Skip("!!! SKIPPING: session leases need PostgreSQL; set " + pgDSNEnv + " (.ci/run does) !!!")
	}
	schemaDSN, _ := postgresSchema(t, dsn)
	const idle = 300 * time.Millisecond
	db, err := Open(t.Context(), testLogger(t), Config{Driver: DriverPostgres, DSN: schemaDSN, IdleTxTimeout: idle})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	s := newTestStore(t, db, WriterOptions{})
	sess := mustCreate(t, s, &Session{OwnerID: "u"})
	a, b := registered(t, db, "a", time.Minute), registered(t, db, "b", time.Minute)
	if _, err := a.Acquire(t.Context(), sess.ID); err != nil {
		t.Fatal(err)
	}
	// A's writer has updated the head and stops before COMMIT.
	tx, err := db.w.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(t.Context(), `UPDATE sessions SET head = head WHERE id = $1`, sess.ID); err != nil {
		t.Fatal(err)
	}
	expire(t, db, sess.ID)

	ctx := ctxTimeout(t, 20*idle)
	epoch, err := b.Acquire(ctx, sess.ID)
	if err != nil {
		t.Fatalf("takeover behind a paused transaction: %v (the lock was never released)", err)
	}
	if epoch != 2 {
		t.Fatalf("epoch %d, want 2", epoch)
	}
	// A wakes: its transaction is gone.
	if err := tx.Commit(); err == nil {
		t.Fatal("the paused transaction committed after the takeover")
	}
}

// A draining replica hands a session over: the release is announced on
// LeaseChannel at commit, and Orphaned lists the session until another
// replica takes it. A plain release is neither announced nor listed, and
// a handover under a stale epoch changes nothing.
func TestLeaseHandover(t *testing.T) {
	t.Parallel()
	db := leaseDB(t)
	s := newTestStore(t, db, WriterOptions{})
	a := registered(t, db, "ra", time.Minute)
	b := registered(t, db, "rb", time.Minute)
	handed := mustCreate(t, s, &Session{OwnerID: "u"})
	released := mustCreate(t, s, &Session{OwnerID: "u"})
	notes := make(chan string, 4)
	connected := make(chan struct{}, 1)
	go func() {
		_ = db.Listen(t.Context(), slog.New(slog.DiscardHandler), []string{LeaseChannel}, ListenHandler{
			Notification: func(_, payload string) { notes <- payload },
			Connected:    func() { connected <- struct{}{} },
		})
	}()
	<-connected
	ctx := t.Context()
	epoch, err := a.Acquire(ctx, handed.ID)
	if err != nil {
		t.Fatal(err)
	}
	other, err := a.Acquire(ctx, released.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Handover(ctx, handed.ID, epoch-1); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, released.ID, other); err != nil {
		t.Fatal(err)
	}
	if ids, err := b.Orphaned(ctx, 10); err != nil || len(ids) != 0 {
		t.Fatalf("orphaned after a stale handover and a release: %v %v, want none", ids, err)
	}
	if err := a.Handover(ctx, handed.ID, epoch); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-notes:
		if got != handed.ID {
			t.Fatalf("handover notice %q, want %q", got, handed.ID)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no handover notice")
	}
	if ids, err := b.Orphaned(ctx, 10); err != nil || len(ids) != 1 || ids[0] != handed.ID {
		t.Fatalf("orphaned after the handover: %v %v, want [%s]", ids, err, handed.ID)
	}
	if _, err := b.Acquire(ctx, handed.ID); err != nil {
		t.Fatal(err)
	}
	if ids, err := b.Orphaned(ctx, 10); err != nil || len(ids) != 0 {
		t.Fatalf("orphaned once taken: %v %v, want none", ids, err)
	}
	if len(notes) != 0 {
		t.Fatalf("a stale handover or a release was announced: %q", <-notes)
	}
}

// A restarted process of a replica's id (it holds the id's lock) takes
// the row of its dead predecessor, whose heartbeat is still fresh, and
// finds the leases that name the id.
func TestLeaseRestartedReplica(t *testing.T) {
	t.Parallel()
	db := leaseDB(t)
	s := newTestStore(t, db, WriterOptions{})
	dead := registered(t, db, "r1", time.Minute)
	sess := mustCreate(t, s, &Session{OwnerID: "u"})
	if _, err := dead.Acquire(t.Context(), sess.ID); err != nil {
		t.Fatal(err)
	}
	next, _ := NewLeases(db, "r1", time.Minute, time.Minute)
	if err := next.Register(t.Context(), "a:2", false); !errors.Is(err, ErrReplicaInUse) {
		t.Fatalf("register over a fresh heartbeat: %v, want ErrReplicaInUse", err)
	}
	if err := next.Register(t.Context(), "a:2", true); err != nil {
		t.Fatalf("register of the restarted process: %v", err)
	}
	ids, err := next.Owned(t.Context())
	if err != nil || len(ids) != 1 || ids[0] != sess.ID {
		t.Fatalf("owned: %v %v, want [%s]", ids, err, sess.ID)
	}
	if _, err := next.Acquire(t.Context(), sess.ID); err != nil {
		t.Fatalf("take back its own lease: %v", err)
	}
}
