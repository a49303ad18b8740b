package main

import (
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"harness/client"
	"harness/internal/session"
	"harness/internal/testkit"
	"harness/internal/testkit/poll"
)

// replicaSet is n replicas (child processes) on one fresh PostgreSQL
// schema and one data directory; replica i has the id replica-<a+i>, so a
// restart of it is the same replica.
type replicaSet struct {
	dir   string
	dsn   string
	env   []string
	tok   string
	procs []*serverProc
}

// newReplicaSet starts n replicas with a lease TTL and env (drain period,
// budget) on each.
func newReplicaSet(t *testing.T, n int, ttl time.Duration, env ...string) *replicaSet {
	t.Helper()
	if testing.Short() {
		t.Skip("spawns servers; skipped with -short")
	}
	if os.Getenv(pgDSNEnv) == "" {
		t.Skip("!!! SKIPPING: replicas need PostgreSQL; set " + pgDSNEnv + " (.ci/run does) !!!")
	}
	b := backends(t)[1].make(t)
	rs := &replicaSet{dir: t.TempDir(), dsn: b.dsn, env: append(append(slices.Clone(b.env), "HARNESS_LEASE_TTL="+ttl.String()), env...)}
	rs.tok = b.token(t, rs.dir)
	for i := range n {
		rs.procs = append(rs.procs, rs.start(t, i))
	}
	return rs
}

// start starts replica i (again).
func (rs *replicaSet) start(t *testing.T, i int) *serverProc {
	t.Helper()
	return startServer(t, rs.dir, append(slices.Clone(rs.env), "HARNESS_REPLICA_ID="+replicaName(i))...)
}

func replicaName(i int) string { return "replica-" + string(rune('a'+i)) }

// holder is the replica holding a session's lease now ("" when none) and
// the lease's epoch.
func (rs *replicaSet) holder(t *testing.T, id string) (string, int64) {
	t.Helper()
	db, err := sql.Open("pgx", rs.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var owner sql.NullString
	var epoch int64
	err = db.QueryRow(`SELECT owner, epoch FROM session_leases WHERE session_id = $1 AND expires_at > now()`, id).Scan(&owner, &epoch)
	if err == sql.ErrNoRows {
		return "", 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return owner.String, epoch
}

// readiness polls url's /readyz until the process stops answering and
// records each answer that differs from the one before.
type readiness struct {
	mu      sync.Mutex
	answers []string // "200 ready", "503 draining", ...
	done    chan struct{}
}

func pollReadiness(url string) *readiness {
	r := &readiness{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for {
			res, err := http.Get(url + "/readyz")
			if err != nil {
				return
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			a := res.Status[:3] + " " + strings.TrimSpace(string(body))
			r.mu.Lock()
			if len(r.answers) == 0 || r.answers[len(r.answers)-1] != a {
				r.answers = append(r.answers, a)
			}
			r.mu.Unlock()
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return r
}

func (r *readiness) seen() []string {
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.answers)
}

var handedOverAt = regexp.MustCompile(`time=(\S+) level=INFO msg="handed the session over to the other replicas" session=(\S+)`)

// handoverTime is when replica logs say it handed session id over (the
// lease released and announced).
func handoverTime(t *testing.T, logs, id string) time.Time {
	t.Helper()
	for _, m := range handedOverAt.FindAllStringSubmatch(logs, -1) {
		if m[2] != id {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, m[1])
		if err != nil {
			t.Fatal(err)
		}
		return at
	}
	t.Fatalf("no handover of session %s logged:\n%s", id, logs)
	return time.Time{}
}

// turnStarts lists the times of the log's turn/start events.
func turnStarts(evs []client.Event) []time.Time {
	var out []time.Time
	for _, e := range evs {
		if e.Type == "turn/start" {
			out = append(out, time.UnixMilli(e.Time))
		}
	}
	return out
}

// checkOnce fails unless each message is in the log exactly once, the log
// keeps the invariants (contiguous seqs, every turn started and ended
// once) and it holds turns turns.
func checkOnce(t *testing.T, evs []client.Event, turns int, msgs ...string) {
	t.Helper()
	if err := session.CheckInvariants(toSession(t, evs)); err != nil {
		t.Fatal(err)
	}
	for i, e := range evs {
		if e.Seq != int64(i) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
	}
	if n, m := len(turnStarts(evs)), countTurnEnds(evs, ""); n != turns || m != turns {
		t.Fatalf("%d turn starts and %d turn ends, want %d of each", n, m, turns)
	}
	for _, m := range msgs {
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
}

// noTrouble fails when a live replica logged a write or lease problem.
func noTrouble(t *testing.T, procs ...*serverProc) {
	t.Helper()
	for _, p := range procs {
		for _, bad := range []string{"seq mismatch", "stored head", "session write failed", "lease lost"} {
			if strings.Contains(p.logs.String(), bad) {
				t.Fatalf("a replica logged %q:\n%s", bad, p.logs)
			}
		}
	}
}

// Three replicas; a session on A runs a turn (a tool sleeping 3 s, well
// within the budget) with a message queued behind it. SIGTERM to A: its
// /readyz answers 503 "draining" before it stops answering, the running
// turn completes on A (not cut by the shutdown), and the queued message
// runs on B or C as soon as A handed the session over: A's lease TTL is a
// minute, so no lapse explains the move. Every acknowledged message is in
// the log once, every turn started and ended once, and every client's
// stream (A's resumed on C) is the stored log.
func TestReplicaDrainFinishesTheTurnAndHandsOver(t *testing.T) {
	t.Parallel()
	rs := newReplicaSet(t, 3, time.Minute, "HARNESS_DRAIN_PERIOD=1s", "HARNESS_SHUTDOWN_TIMEOUT=20s")
	a, b, c := rs.procs[0], rs.procs[1], rs.procs[2]
	ctx := t.Context()
	ca := client.New(a.URL, client.WithToken(rs.tok))
	cb := client.New(b.URL, client.WithToken(rs.tok))
	s, err := ca.CreateSession(ctx, client.NewSession{Title: "drain", Mode: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	wa := watch(t, "A", a.URL, rs.tok, s.ID, -1)
	wb := watch(t, "B", b.URL, rs.tok, s.ID, -1)
	wc := watch(t, "C", c.URL, rs.tok, s.ID, -1)
	m1, err := ca.SendMessage(ctx, s.ID, "run: echo started; sleep 3", "followup")
	if err != nil {
		t.Fatal(err)
	}
	m2, err := cb.SendMessage(ctx, s.ID, "queued behind the running turn", "followup")
	if err != nil {
		t.Fatalf("message through B: %v", err)
	}
	poll.Eventually(t, "the tool to run on A", func() bool {
		return slices.ContainsFunc(events(t, cb, s.ID), func(e client.Event) bool { return e.Type == "tool/output" || e.Type == "tool/call" })
	}, poll.Within(30*time.Second))

	ready := pollReadiness(a.URL)
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err, exited := a.exitErr(60 * time.Second); !exited || err != nil {
		t.Fatalf("A did not stop cleanly: exited %v, %v\n%s", exited, err, a.logs)
	}
	seen := ready.seen()
	if i := slices.Index(seen, "503 draining"); i < 0 || slices.Contains(seen[i:], "200 ready") {
		t.Fatalf("A's /readyz answers after SIGTERM: %q, want 503 draining until it stopped", seen)
	}

	var evs []client.Event
	if !poll.Wait(t, func() bool {
		evs = events(t, cb, s.ID)
		return countTurnEnds(evs, "completed") == 2
	}, poll.Within(30*time.Second)) {
		t.Fatalf("the queued message did not run elsewhere: %d events\nA:\n%s\nB:\n%s\nC:\n%s", len(evs), a.logs, b.logs, c.logs)
	}
	checkOnce(t, evs, 2, m1, m2)
	if countTurnEnds(evs, "aborted") != 0 {
		t.Fatal("the running turn was cut by the shutdown")
	}
	owner, _ := rs.holder(t, s.ID)
	if owner != replicaName(1) && owner != replicaName(2) {
		t.Fatalf("the session's lease is held by %q, want B or C", owner)
	}
	released := handoverTime(t, a.logs.String(), s.ID)
	t.Logf("handover: the queued turn started on %s %v after A released the lease", owner, turnStarts(evs)[1].Sub(released).Round(time.Millisecond))

	wa2 := watch(t, "A resumed on C", c.URL, rs.tok, s.ID, wa.last())
	head := evs[len(evs)-1].Seq
	for _, w := range []*watcher{wb, wc, wa2} {
		if !poll.Wait(t, func() bool { return w.last() >= head }, poll.Within(30*time.Second)) {
			t.Fatalf("%s's stream stopped at seq %d, the log's head is %d", w.name, w.last(), head)
		}
	}
	for _, w := range []struct {
		name string
		evs  []client.Event
	}{{"B", wb.events()}, {"C", wc.events()}, {"A then C", append(wa.events(), wa2.events()...)}} {
		if err := testkit.SameStream(w.evs, evs); err != nil {
			t.Errorf("%s's stream is not the stored log: %v", w.name, err)
		}
	}
	noTrouble(t, b, c)
}

// A turn longer than the budget (a tool sleeping 60 s; budget 3 s) is
// stopped at the end of the budget as a stop always did (aborted, cause
// shutdown), and the session is handed over: the message queued behind it
// runs on B or C, long before A's minute-long lease could lapse.
func TestReplicaDrainStopsALongTurnAndHandsOver(t *testing.T) {
	t.Parallel()
	rs := newReplicaSet(t, 3, time.Minute, "HARNESS_DRAIN_PERIOD=500ms", "HARNESS_SHUTDOWN_TIMEOUT=3s")
	a, b, c := rs.procs[0], rs.procs[1], rs.procs[2]
	ctx := t.Context()
	ca := client.New(a.URL, client.WithToken(rs.tok))
	cc := client.New(c.URL, client.WithToken(rs.tok))
	s, err := ca.CreateSession(ctx, client.NewSession{Title: "long turn", Mode: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	m1, err := ca.SendMessage(ctx, s.ID, "run: echo started; sleep 60", "followup")
	if err != nil {
		t.Fatal(err)
	}
	m2, err := cc.SendMessage(ctx, s.ID, "queued behind the long turn", "followup")
	if err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, "the tool to run on A", func() bool {
		return slices.ContainsFunc(events(t, cc, s.ID), func(e client.Event) bool { return e.Type == "tool/output" || e.Type == "tool/call" })
	}, poll.Within(30*time.Second))
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if _, exited := a.exitErr(30 * time.Second); !exited {
		t.Fatalf("A did not stop\n%s", a.logs)
	}
	var evs []client.Event
	if !poll.Wait(t, func() bool {
		evs = events(t, cc, s.ID)
		return countTurnEnds(evs, "completed") == 1
	}, poll.Within(30*time.Second)) {
		t.Fatalf("the queued message did not run elsewhere: %d events\nA:\n%s\nB:\n%s\nC:\n%s", len(evs), a.logs, b.logs, c.logs)
	}
	checkOnce(t, evs, 2, m1, m2)
	stopped := slices.ContainsFunc(evs, func(e client.Event) bool {
		return e.Type == "turn/end" && strings.Contains(string(e.Data), `"kind":"aborted"`) && strings.Contains(string(e.Data), `"shutdown"`)
	})
	if !stopped || countTurnEnds(evs, "aborted") != 1 {
		t.Fatal("the long turn did not end as aborted by the shutdown")
	}
	owner, _ := rs.holder(t, s.ID)
	if owner != replicaName(1) && owner != replicaName(2) {
		t.Fatalf("the session's lease is held by %q, want B or C", owner)
	}
	released := handoverTime(t, a.logs.String(), s.ID)
	t.Logf("handover: the queued turn started on %s %v after A released the lease", owner, turnStarts(evs)[1].Sub(released).Round(time.Millisecond))
	noTrouble(t, b, c)
}

// A replica killed while it holds leases (one session mid-turn with a
// message queued, one mid-turn alone) and restarted with the same id
// takes both leases back at once, under new epochs: B and C could not
// have, the leases last a minute. The restarted replica repairs each open
// turn once (interrupted) and runs the queued message.
func TestReplicaRestartTakesItsLeasesBack(t *testing.T) {
	t.Parallel()
	rs := newReplicaSet(t, 3, time.Minute)
	a := rs.procs[0]
	ctx := t.Context()
	ca := client.New(a.URL, client.WithToken(rs.tok))
	queued, err := ca.CreateSession(ctx, client.NewSession{Title: "queued", Mode: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	alone, err := ca.CreateSession(ctx, client.NewSession{Title: "alone", Mode: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, m := range []struct{ id, text string }{{queued.ID, "run: echo started; sleep 60"}, {queued.ID, "queued behind"}, {alone.ID, "run: echo started; sleep 60"}} {
		id, err := ca.SendMessage(ctx, m.id, m.text, "followup")
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, id)
	}
	epochs := map[string]int64{}
	for _, id := range []string{queued.ID, alone.ID} {
		poll.Eventually(t, "the tool to run on A", func() bool {
			return slices.ContainsFunc(events(t, ca, id), func(e client.Event) bool { return e.Type == "tool/output" || e.Type == "tool/call" })
		}, poll.Within(30*time.Second))
		owner, epoch := rs.holder(t, id)
		if owner != replicaName(0) {
			t.Fatalf("session %s held by %q before the kill, want A", id, owner)
		}
		epochs[id] = epoch
	}

	a.kill()
	a = rs.start(t, 0)
	ca = client.New(a.URL, client.WithToken(rs.tok))
	for _, id := range []string{queued.ID, alone.ID} {
		poll.Eventually(t, "the restarted A to take the lease back", func() bool {
			owner, epoch := rs.holder(t, id)
			return owner == replicaName(0) && epoch > epochs[id]
		}, poll.Within(30*time.Second))
	}
	var evs []client.Event
	poll.Eventually(t, "the queued message to run", func() bool {
		evs = events(t, ca, queued.ID)
		return countTurnEnds(evs, "completed") == 1
	}, poll.Within(30*time.Second))
	checkOnce(t, evs, 2, msgs[0], msgs[1])
	if countTurnEnds(evs, "interrupted") != 1 {
		t.Fatal("the killed turn was not repaired once")
	}
	poll.Eventually(t, "the lone turn's repair", func() bool {
		evs = events(t, ca, alone.ID)
		return countTurnEnds(evs, "interrupted") == 1
	}, poll.Within(30*time.Second))
	checkOnce(t, evs, 1, msgs[2])
	if !strings.Contains(a.logs.String(), "taking back the sessions a previous process of this replica held") {
		t.Fatalf("the restarted replica did not take its sessions back:\n%s", a.logs)
	}
	noTrouble(t, rs.procs[1], rs.procs[2])
}

// A rolling restart of three replicas under load: each in turn gets
// SIGTERM, stops, and starts again with its id, while a client keeps
// sending messages (a tool sleeping 1 s, well within the budget) to six
// sessions through whichever replica answers, as a load balancer would,
// retrying a failed send on the next replica with the same send key. No
// turn is aborted or interrupted, every acknowledged message runs once in
// a completed turn of its own, and every log keeps its invariants; the
// leases last a minute, so nothing waited for one to lapse.
func TestReplicaRollingRestartUnderLoad(t *testing.T) {
	t.Parallel()
	rs := newReplicaSet(t, 3, time.Minute, "HARNESS_DRAIN_PERIOD=300ms", "HARNESS_SHUTDOWN_TIMEOUT=10s")
	ctx := t.Context()
	var mu sync.Mutex
	urls := []string{rs.procs[0].URL, rs.procs[1].URL, rs.procs[2].URL}
	url := func(i int) string {
		mu.Lock()
		defer mu.Unlock()
		return urls[i%len(urls)]
	}
	var ids []string
	for i := range 6 {
		s, err := client.New(url(i), client.WithToken(rs.tok)).CreateSession(ctx, client.NewSession{Title: "rolling", Mode: "auto"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
	}
	// send sends one message, through replica next, next+1, ... until
	// one acknowledges it.
	send := func(id string, next int) (string, error) {
		key := client.NewKey()
		var err error
		for try := 0; try < 300; try++ {
			var got string
			got, err = client.New(url(next+try), client.WithToken(rs.tok)).SendMessageKey(ctx, id, "run: sleep 1", "followup", key)
			if err == nil {
				return got, nil
			}
			time.Sleep(100 * time.Millisecond)
		}
		return "", err
	}
	acked := map[string][]string{}
	stop := make(chan struct{})
	loadDone := make(chan error, 1)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				loadDone <- nil
				return
			case <-time.After(150 * time.Millisecond):
			}
			id := ids[n%len(ids)]
			m, err := send(id, n)
			if err != nil {
				loadDone <- fmt.Errorf("send to %s: %w", id, err)
				return
			}
			mu.Lock()
			acked[id] = append(acked[id], m)
			mu.Unlock()
			n++
		}
	}()
	time.Sleep(2 * time.Second) // load before the first stop
	all := slices.Clone(rs.procs)
	for i, p := range all {
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err, exited := p.exitErr(60 * time.Second); !exited || err != nil {
			t.Fatalf("%s did not stop cleanly: exited %v, %v\n%s", replicaName(i), exited, err, p.logs)
		}
		rs.procs[i] = rs.start(t, i)
		all = append(all, rs.procs[i])
		mu.Lock()
		urls[i] = rs.procs[i].URL
		mu.Unlock()
	}
	time.Sleep(time.Second) // load after the last start
	close(stop)
	if err := <-loadDone; err != nil {
		t.Fatal(err)
	}
	c := client.New(rs.procs[0].URL, client.WithToken(rs.tok))
	total := 0
	for _, id := range ids {
		mu.Lock()
		want := slices.Clone(acked[id])
		mu.Unlock()
		total += len(want)
		var evs []client.Event
		if !poll.Wait(t, func() bool {
			evs = events(t, c, id)
			return countTurnEnds(evs, "") >= len(want)
		}, poll.Within(60*time.Second)) {
			t.Fatalf("session %s: %d turn ends, %d messages acknowledged", id, countTurnEnds(evs, ""), len(want))
		}
		checkOnce(t, evs, len(want), want...)
		if n := countTurnEnds(evs, "completed"); n != len(want) {
			t.Fatalf("session %s: %d of %d turns completed (aborted %d, interrupted %d)", id, n, len(want), countTurnEnds(evs, "aborted"), countTurnEnds(evs, "interrupted"))
		}
	}
	handovers := 0
	for _, p := range all {
		handovers += strings.Count(p.logs.String(), "handed the session over")
	}
	t.Logf("%d messages over %d sessions, all completed; %d handovers", total, len(ids), handovers)
	if handovers == 0 {
		t.Fatal("no session was handed over: was any message queued at a stop?")
	}
	noTrouble(t, all...)
}
