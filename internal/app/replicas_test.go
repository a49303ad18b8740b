package app_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"harness/client"
	"harness/internal/app"
	"harness/internal/config"
	"harness/internal/driver"
	"harness/internal/llm/fake"
	"harness/internal/models"
	"harness/internal/testkit/apptest"
	"harness/internal/testkit/poll"
)

const pgDSNEnv = "HARNESS_TEST_POSTGRES_DSN"

// pgSchema creates a PostgreSQL schema dropped when the test ends and
// returns the DSN that uses it and a connection to it; it skips loudly
// without a server.
func pgSchema(t *testing.T) (string, *sql.DB) {
	t.Helper()
	dsn := os.Getenv(pgDSNEnv)
	if dsn == "" {
		t.Skip("!!! SKIPPING: replicas need PostgreSQL; set " + pgDSNEnv + " (.ci/run does) !!!")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "t_replicas_" + hex.EncodeToString(b[:])
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatal(err)
	}
	schemaDSN := dsn + " search_path=" + schema
	db, err := sql.Open("pgx", schemaDSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = db.Close()
		if _, err := admin.Exec("DROP SCHEMA " + schema + " CASCADE"); err != nil {
			t.Errorf("drop schema: %v", err)
		}
		_ = admin.Close()
	})
	return schemaDSN, db
}

// replica starts the app as one replica on the PostgreSQL database dsn and
// runs Start (the replica registers before any session is touched).
func replica(t *testing.T, dsn, id string, ttl time.Duration) *apptest.App {
	t.Helper()
	return replicaWith(t, dsn, id, ttl, 0)
}

// replicaKey is the secret key the test replicas share (as replicas of one
// database must: it signs their requests to each other).
const replicaKey = "c2hhcmVkLXJlcGxpY2Eta2V5LWZvci10aGUtdGVzdHM="

// replicaEnv is the test replicas' environment: the shared key.
func replicaEnv(k string) string {
	if k == "HARNESS_SECRET_KEY" {
		return replicaKey
	}
	return os.Getenv(k)
}

// replicaWith is replica with the demo model streaming a chunk every
// chunkDelay.
func replicaWith(t *testing.T, dsn, id string, ttl, chunkDelay time.Duration) *apptest.App {
	t.Helper()
	a := apptest.StartApp(t, func(c *config.Config) {
		c.DBDriver, c.DBDSN = "postgres", dsn
		c.Replica = config.Replica{ID: id, LeaseTTL: ttl}
	}, app.Options{
		DemoOptions: []fake.Option{fake.WithChunkDelay(chunkDelay)},
		Getenv:      replicaEnv,
	})
	if err := a.Start(t.Context()); err != nil {
		t.Fatalf("start replica %s: %v", id, err)
	}
	return a
}

// Two replicas race to load the same sessions: for each, exactly one runs
// its agent and the other is told who owns it.
func TestReplicasRaceForALease(t *testing.T) {
	t.Parallel()
	dsn, _ := pgSchema(t)
	a := replica(t, dsn, "replica-a", time.Minute)
	b := replica(t, dsn, "replica-b", time.Minute)
	ctx := t.Context()
	for range 10 {
		row := models.Session{OwnerID: "u"}
		if err := a.Store.CreateSession(ctx, &row); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var errA, errB error
		wg.Go(func() { _, errA = a.Manager.Get(ctx, row.ID) })
		wg.Go(func() { _, errB = b.Manager.Get(ctx, row.ID) })
		wg.Wait()
		winner, loserErr, loser := "replica-a", errB, b
		if errA != nil {
			winner, loserErr, loser = "replica-b", errA, a
		}
		if errA == nil == (errB == nil) {
			t.Fatalf("session %s: replica-a %v, replica-b %v: want exactly one owner", row.ID, errA, errB)
		}
		var no *driver.NotOwnerError
		if !errors.As(loserErr, &no) || no.Owner != winner || !errors.Is(loserErr, driver.ErrNotOwner) {
			t.Fatalf("loser: %v, want ErrNotOwner naming %s", loserErr, winner)
		}
		if _, ok := loser.Manager.Lookup(row.ID); ok {
			t.Fatal("the loser loaded the agent")
		}
	}
}

// Replica A owns a session; its lease expires while A is, say, paused, and
// replica B takes the session over and appends. A, still believing it owns
// the session, appends: the database refuses the batch (stale epoch), A's
// agent stops, and the stored log holds only B's appends after the
// takeover. Meanwhile a client's message to B was forwarded to A.
func TestReplicaStaleEpochRefused(t *testing.T) {
	t.Parallel()
	dsn, db := pgSchema(t)
	// An hour's TTL: neither replica renews nor expires during the test;
	// the expiry is forced below.
	a := replica(t, dsn, "replica-a", time.Hour)
	b := replica(t, dsn, "replica-b", time.Hour)
	ctx := t.Context()
	u := a.User(t, "alice", true)
	ca := u.Client
	cb := client.New(b.URL, client.WithToken(u.Token))

	s, err := ca.CreateSession(ctx, client.NewSession{Title: "fenced", Mode: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ca.SendMessage(ctx, s.ID, "hello from A", "followup"); err != nil {
		t.Fatal(err)
	}
	a.WaitIdle(t, s.ID)

	// A message sent to the non-owner is forwarded to the owner and runs
	// there.
	if _, err := cb.SendMessage(ctx, s.ID, "forwarded by B", "followup"); err != nil {
		t.Fatalf("message to the non-owner: %v, want it forwarded to replica-a", err)
	}
	if _, ok := b.Manager.Lookup(s.ID); ok {
		t.Fatal("replica-b loaded the agent replica-a owns")
	}
	a.WaitIdle(t, s.ID)

	if _, err := db.ExecContext(ctx, `UPDATE session_leases SET expires_at = now() - interval '1 second' WHERE session_id = $1`, s.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := cb.SendMessage(ctx, s.ID, "hello from B", "followup"); err != nil {
		t.Fatalf("takeover by B: %v", err)
	}
	b.WaitIdle(t, s.ID)
	takeover := head(t, b, s.ID)

	if _, ok := a.Manager.Lookup(s.ID); !ok {
		t.Fatal("A's agent is gone before A appended: the test would prove nothing")
	}
	if _, err := ca.SendMessage(ctx, s.ID, "stale from A", "followup"); err == nil {
		t.Fatal("the stale owner's message was acknowledged")
	}
	poll.Eventually(t, "A's agent to stop", func() bool {
		_, ok := a.Manager.Lookup(s.ID)
		return !ok
	}, poll.Within(10*time.Second))
	// A counted the lease it lost once: fenced when its append met the
	// new epoch first (and then the refusal too), taken or unrenewed when
	// its heartbeat's renewal (every 500 ms) found out first.
	fenced := metricOf(t, a, `harness_lease_losses_total{reason="fenced"}`)
	taken := metricOf(t, a, `harness_lease_losses_total{reason="taken"}`)
	unrenewed := metricOf(t, a, `harness_lease_losses_total{reason="unrenewed"}`)
	if fenced+taken+unrenewed != 1 {
		t.Errorf("A's lease losses: fenced %v, taken %v, unrenewed %v, want one in all", fenced, taken, unrenewed)
	}
	if v := metricOf(t, a, "harness_fencing_refusals_total"); fenced == 1 && v < 1 {
		t.Errorf("A's fencing refusals = %v after a fenced loss, want at least 1", v)
	}
	if v := metricOf(t, a, "harness_leases_held"); v != 0 {
		t.Errorf("A still counts %v leases held", v)
	}

	evs, err := cb.Events(ctx, s.ID, -1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := head(t, b, s.ID); got != takeover {
		t.Fatalf("head moved from %d to %d after the takeover was idle", takeover, got)
	}
	var sawA, sawB bool
	for _, e := range evs.Events {
		d := string(e.Data)
		sawA = sawA || strings.Contains(d, "hello from A")
		sawB = sawB || strings.Contains(d, "hello from B")
		if strings.Contains(d, "stale from A") {
			t.Fatalf("the stale owner's append is stored at seq %d", e.Seq)
		}
	}
	if !sawA || !sawB {
		t.Fatalf("stored log: A's message %v, B's %v; want both", sawA, sawB)
	}
	// A's next command finds B the owner: it is forwarded there instead of
	// running a second agent on A.
	if _, err := ca.SendMessage(ctx, s.ID, "again from A", "followup"); err != nil {
		t.Fatalf("after the fence: %v, want the message forwarded to replica-b", err)
	}
	if _, ok := a.Manager.Lookup(s.ID); ok {
		t.Fatal("replica-a loaded a second agent after the fence")
	}
	b.WaitIdle(t, s.ID)
	last, err := cb.Events(ctx, s.ID, takeover, 0)
	if err != nil {
		t.Fatal(err)
	}
	var again bool
	for _, e := range last.Events {
		again = again || strings.Contains(string(e.Data), "again from A")
	}
	if !again {
		t.Fatal("the message A forwarded is not in the log after the takeover")
	}
}

func head(t *testing.T, a *apptest.App, id string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	row, err := a.Store.GetSession(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return row.Head
}
