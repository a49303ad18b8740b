package models

import (
	"errors"
	"testing"
	"time"
)

// staleHeartbeat ages a replica's heartbeat by d, as if it had not renewed
// for that long (killed, or paused).
func staleHeartbeat(t *testing.T, db *DB, id string, d time.Duration) {
	t.Helper()
	if err := db.W.Exec(`UPDATE replicas SET heartbeat_at = now() - ? * interval '1 millisecond' WHERE id = ?`, d.Milliseconds(), id).Error; err != nil {
		t.Fatal(err)
	}
}

// A lease far from expiry whose owner's heartbeat is older than the stale
// bound is orphaned, has no holder and is taken by one conditional
// statement with a higher epoch; with a fresh heartbeat it is held. The
// old owner's renewal then reports it lost and its appends are fenced.
func TestLeaseStaleHeartbeatTakeover(t *testing.T) {
	t.Parallel()
	db := leaseDB(t)
	s := newTestStore(t, db, WriterOptions{})
	ctx := t.Context()
	mk := func(id string) *Leases {
		l, err := NewLeases(db, id, time.Minute, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Register(ctx, id+".example:8080", false); err != nil {
			t.Fatal(err)
		}
		return l
	}
	a, b := mk("ra"), mk("rb")
	sess := mustCreate(t, s, &Session{OwnerID: "u"})
	epoch, err := a.Acquire(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}

	// Fresh heartbeat: held, not orphaned.
	var held *LeaseHeldError
	if _, err := b.Acquire(ctx, sess.ID); !errors.As(err, &held) || held.Owner != "ra" {
		t.Fatalf("acquire of a live owner's lease: %v, want held by ra", err)
	}
	if ids, err := b.Orphaned(ctx, 10); err != nil || len(ids) != 0 {
		t.Fatalf("orphaned with a fresh heartbeat: %v %v", ids, err)
	}
	if owner, _, ok, err := b.Holder(ctx, sess.ID); err != nil || !ok || owner != "ra" {
		t.Fatalf("holder with a fresh heartbeat: %q %v %v, want ra", owner, ok, err)
	}

	staleHeartbeat(t, db, "ra", 3*time.Second)
	if ids, err := b.Orphaned(ctx, 10); err != nil || len(ids) != 1 || ids[0] != sess.ID {
		t.Fatalf("orphaned with a stale heartbeat: %v %v, want [%s]", ids, err, sess.ID)
	}
	if _, _, ok, err := b.Holder(ctx, sess.ID); err != nil || ok {
		t.Fatalf("holder with a stale heartbeat: ok %v %v, want none", ok, err)
	}
	if hs, err := b.Holders(ctx, []string{sess.ID}); err != nil || len(hs) != 0 {
		t.Fatalf("holders with a stale heartbeat: %v %v, want none", hs, err)
	}
	if lapsed, err := b.Lapsed(ctx, sess.ID); err != nil || lapsed < 500*time.Millisecond {
		t.Fatalf("lapsed %v %v, want about 1s (stale since heartbeat + 2s)", lapsed, err)
	}
	next, err := b.Acquire(ctx, sess.ID)
	if err != nil {
		t.Fatalf("takeover of a stale owner's lease: %v", err)
	}
	if next <= epoch {
		t.Fatalf("epoch %d after takeover, want > %d", next, epoch)
	}
	// The old owner wakes: its renewal (which refreshes its heartbeat)
	// reports the lease lost, and the lease stays b's.
	kept, err := a.Renew(ctx, map[string]int64{sess.ID: epoch})
	if err != nil || kept[sess.ID] {
		t.Fatalf("renewal by the old owner: kept %v %v, want lost", kept, err)
	}
	if owner, _, ok, err := a.Holder(ctx, sess.ID); err != nil || !ok || owner != "rb" {
		t.Fatalf("holder after takeover: %q %v %v, want rb", owner, ok, err)
	}
	if _, err := a.Acquire(ctx, sess.ID); !errors.As(err, &held) || held.Owner != "rb" {
		t.Fatalf("old owner re-acquiring: %v, want held by rb", err)
	}
}
