package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"harness/client"
	"harness/internal/crashpoint"
	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/llm/openai"
	"harness/internal/session"
	"harness/internal/testkit/poll"
)

// bigCorpusLog is the largest of the recorded DeepSeek Harness logs.
var bigCorpusLog = filepath.Join(corpusDir, "examples--headless-agent--advanced-toolchain--session.jsonl")

// killPoints is how many times each operation is interrupted.
func killPoints() int {
	if testing.Short() {
		return 8
	}
	return 20
}

// killDelays spreads n kill points over span: point i lands at a random
// moment of the i-th of n equal slices, so every phase of the operation is
// hit and the order is random. The seed is logged to replay a run.
func killDelays(t *testing.T, n int, span time.Duration) []time.Duration {
	seed := time.Now().UnixNano()
	t.Logf("kill points: seed %d, %d points over %v", seed, n, span)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	slice := span / time.Duration(n)
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(i)*slice + time.Duration(rng.Int64N(int64(slice)))
	}
	rng.Shuffle(n, func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// SIGKILL the server at 20 points spread over an import of the corpus's
// biggest log (each import step paused by the test hook
// HARNESS_TEST_PAUSE_AT, so kills land between all of them), then
// restart it: each time the import either exists complete (every event,
// its workspace) or left nothing: no session, no workspace directory, no
// journal file. An import the server acknowledged always exists.
//
// On SQLite and on PostgreSQL, with 20 points each (a start on PostgreSQL
// is as quick). On PostgreSQL each start comes at once after the kill,
// while the dead server's leases are still held: the journal's repair
// does not wait for them.
func TestImportKilled(t *testing.T) {
	if testing.Short() {
		t.Log("-short: fewer kill points")
	}
	t.Parallel()
	forEachBackend(t, testImportKilled)
}

func testImportKilled(t *testing.T, b backend) {
	dir := t.TempDir()
	token := b.token(t, dir)
	ctx := context.Background()
	log, err := os.ReadFile(bigCorpusLog)
	if err != nil {
		t.Fatal(err)
	}
	const pause = 25 * time.Millisecond
	env := b.serverEnv("HARNESS_TEST_PAUSE_AT=" + crashpoint.ImportStep + ":" + pause.String())
	srv := startServer(t, dir, env...)
	c := client.New(srv.URL, client.WithToken(token))

	// The reference: the same import, not interrupted.
	ref, err := c.Import(ctx, bytes.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	want := len(events(t, c, ref.ID))

	outcomes := map[string]int{}
	// Four paused steps and the work between them.
	for _, delay := range killDelays(t, killPoints(), 6*pause) {
		before := sessionIDs(t, c)
		done := make(chan error, 1)
		go func() {
			_, err := c.Import(ctx, bytes.NewReader(log))
			done <- err
		}()
		time.Sleep(delay) // where to kill, not an assertion
		srv.kill()
		acked := <-done == nil

		srv = startServer(t, dir, env...)
		c = client.New(srv.URL, client.WithToken(token))
		after := sessionIDs(t, c)
		var added []string
		for _, id := range after {
			if !slices.Contains(before, id) {
				added = append(added, id)
			}
		}
		switch {
		case len(added) > 1:
			t.Fatalf("kill at %v: %d sessions appeared", delay, len(added))
		case len(added) == 0 && acked:
			t.Fatalf("kill at %v: the acknowledged import is gone", delay)
		case len(added) == 0 && strings.Contains(srv.logs.String(), "interrupted import removed"):
			outcomes["undone at start"]++
		case len(added) == 0:
			outcomes["nothing began"]++
		default:
			evs := events(t, c, added[0])
			if len(evs) != want {
				t.Fatalf("kill at %v: the imported session has %d events, want %d", delay, len(evs), want)
			}
			if err := session.CheckInvariants(toSession(t, evs)); err != nil {
				t.Fatalf("kill at %v: %v", delay, err)
			}
			outcomes["complete"]++
		}
		noImportLeftovers(t, dir, after)
	}
	t.Logf("outcomes: %v", outcomes)
	// Four pauses fill most of the span: some kills land inside.
	if outcomes["undone at start"] == 0 {
		t.Fatalf("no kill landed inside an import: %v", outcomes)
	}
}

// sessionIDs lists the caller's sessions.
func sessionIDs(t *testing.T, c *client.Client) []string {
	t.Helper()
	var ids []string
	opts := client.ListOptions{Limit: 100}
	for {
		page, err := c.ListSessions(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range page.Sessions {
			ids = append(ids, s.ID)
		}
		if page.Next == "" {
			return ids
		}
		opts.Cursor = page.Next
	}
}

// noImportLeftovers fails unless every workspace directory belongs to one
// of the sessions and the import journal is empty.
func noImportLeftovers(t *testing.T, dir string, sessions []string) {
	t.Helper()
	des, err := os.ReadDir(filepath.Join(dir, "workspaces"))
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range des {
		if !slices.Contains(sessions, de.Name()) {
			t.Fatalf("workspace directory %s belongs to no session", de.Name())
		}
	}
	journal, err := os.ReadDir(filepath.Join(dir, "imports"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if len(journal) != 0 {
		t.Fatalf("the import journal still holds %d files", len(journal))
	}
}

// summaryWords is the scripted summary: a slow stream (one word per 10 ms)
// so that kills land inside the summary call.
const summaryWords = 60

// SIGKILL the server at 20 points spread over a manual compaction (POST
// /api/sessions/{id}/compact) whose summary the scripted model streams
// slowly, then restart it: once the session is opened (its cold load runs
// crash repair) every compaction/start has exactly one compaction/end (an
// interrupted one says so), the log keeps its invariants, and the session
// takes a new message and runs a turn.
//
// On SQLite and on PostgreSQL, with 20 points each (a start on PostgreSQL
// is as quick). On PostgreSQL every other start comes once the dead
// server's lease lapsed (its load repairs); the others come at once, while
// the lease is still held, and the new server, which has the dead one's
// replica id (the default is stable across restarts), takes the lease back
// at once and repairs the session.
func TestCompactKilled(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testCompactKilled)
}

func testCompactKilled(t *testing.T, b backend) {
	model := fake.NewServer(fake.Script{Responder: func(rec fake.Recorded) fake.Reply {
		switch rec.Header.Get(openai.HeaderPurpose) {
		case string(llm.PurposeCompaction):
			return fake.Reply{Text: strings.Repeat("summary ", summaryWords), Delay: 10 * time.Millisecond}
		case string(llm.PurposeTitle):
			return fake.Reply{Text: "Killed compactions"}
		}
		// Long answers, so a summary is always smaller than what it
		// replaces.
		return fake.Reply{Text: strings.Repeat("A long answer that a checkpoint will replace. ", 200), Chunks: 4}
	}}, fake.WithoutRecords())
	url := model.Start(t)
	env := b.serverEnv("OPENAI_API_KEY=test", "OPENAI_BASE_URL="+url+"/v1", "OPENAI_MODEL=scripted")

	dir := t.TempDir()
	token := b.token(t, dir)
	ctx := context.Background()
	srv := startServer(t, dir, env...)
	c := client.New(srv.URL, client.WithToken(token))
	s, err := c.CreateSession(ctx, client.NewSession{Title: "compaction under kills"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Provider != "openai" {
		t.Fatalf("session on %s, want the scripted route", s.Provider)
	}
	runTurn(t, c, s.ID, "first")
	runTurn(t, c, s.ID, "second")

	outcomes := map[string]int{}
	for i, delay := range killDelays(t, killPoints(), 900*time.Millisecond) {
		seen := len(brackets(t, events(t, c, s.ID)))
		done := make(chan error, 1)
		go func() {
			_, err := c.Compact(ctx, s.ID)
			done <- err
		}()
		held := b.dsn != "" && i%2 == 1
		var epoch int64
		if b.dsn != "" {
			epoch = leaseEpoch(t, b, s.ID)
		}
		time.Sleep(delay) // where to kill, not an assertion
		srv.kill()
		<-done

		if !held {
			b.lapse(t)
		}
		srv = startServer(t, dir, env...)
		c = client.New(srv.URL, client.WithToken(token))
		// Opening the session loads it: crash repair runs on that cold
		// load.
		if _, err := c.GetSession(ctx, s.ID); err != nil {
			t.Fatal(err)
		}
		if b.dsn != "" {
			// A read does not load the session: the repair is the new
			// server's taking the lease back (lapsed or not).
			takenOver(t, b, srv, c, s.ID, epoch)
		}
		// The repair is stored once the load is done, after the lease
		// was taken: wait for it, then check there is exactly one end.
		var evs []client.Event
		poll.Eventually(t, "the repair to be stored", func() bool {
			evs = events(t, c, s.ID)
			return !slices.ContainsFunc(brackets(t, evs), func(b *bracket) bool { return b.ends == 0 })
		}, poll.Within(30*time.Second))
		if err := session.CheckInvariants(toSession(t, evs)); err != nil {
			t.Fatalf("kill at %v: %v", delay, err)
		}
		all := brackets(t, evs)
		for _, b := range all {
			if b.ends != 1 {
				t.Fatalf("kill at %v: compaction %s has %d ends\n%s", delay, b.id, b.ends, dumpTypes(evs))
			}
		}
		switch {
		case len(all) == seen:
			outcomes["not started"]++
		case all[len(all)-1].err == session.CompactionInterrupted:
			outcomes["interrupted"]++
		case all[len(all)-1].err == "":
			outcomes["completed"]++
		default:
			t.Fatalf("kill at %v: compaction ended %q", delay, all[len(all)-1].err)
		}
		runTurn(t, c, s.ID, fmt.Sprint("after kill ", i))
	}
	t.Logf("outcomes: %v", outcomes)
	// The summary alone is two thirds of the span: some kills land in it.
	if outcomes["interrupted"] == 0 {
		t.Fatalf("no kill landed inside a compaction: %v", outcomes)
	}
}

// takenOver waits, on PostgreSQL, until srv holds the lease of session
// id under an epoch after before (a killed server held it under before
// at srv's start, perhaps with srv's id), and its load (and so its crash
// repair) is done: a session loaded here answers with its live state.
func takenOver(t *testing.T, b backend, srv *serverProc, c *client.Client, id string, before int64) {
	t.Helper()
	m := replicaRegistered.FindStringSubmatch(srv.logs.String())
	if m == nil {
		t.Fatalf("no replica id in the log:\n%s", srv.logs)
	}
	db, err := sql.Open("pgx", b.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	poll.Eventually(t, "the new server to take the session's lease", func() bool {
		var owner sql.NullString
		var epoch int64
		err := db.QueryRow(`SELECT owner, epoch FROM session_leases WHERE session_id = $1 AND expires_at > now()`, id).Scan(&owner, &epoch)
		if err != nil || owner.String != m[1] || epoch <= before {
			return false
		}
		// Get waits for a load in progress.
		_, err = c.GetSession(context.Background(), id)
		return err == nil
	}, poll.Within(30*time.Second))
}

// leaseEpoch is the epoch of session id's lease (0 when it has none).
func leaseEpoch(t *testing.T, b backend, id string) int64 {
	t.Helper()
	db, err := sql.Open("pgx", b.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var epoch int64
	if err := db.QueryRow(`SELECT coalesce(max(epoch), 0) FROM session_leases WHERE session_id = $1`, id).Scan(&epoch); err != nil {
		t.Fatal(err)
	}
	return epoch
}

var replicaRegistered = regexp.MustCompile(`msg="replica registered" replica=(\S+)`)

// bracket is one compaction in a log: how many ends closed it and the
// last end's error.
type bracket struct {
	id   string
	ends int
	err  string
}

// brackets lists a log's compactions in the order they started.
func brackets(t *testing.T, evs []client.Event) []*bracket {
	t.Helper()
	var out []*bracket
	byID := map[string]*bracket{}
	for _, ev := range evs {
		var v struct {
			CompactionID string `json:"compactionId"`
			Error        string `json:"error"`
		}
		switch ev.Type {
		case string(session.TypeCompactionStart), string(session.TypeCompactionEnd):
			if err := json.Unmarshal(ev.Data, &v); err != nil {
				t.Fatal(err)
			}
		default:
			continue
		}
		b := byID[v.CompactionID]
		if b == nil {
			b = &bracket{id: v.CompactionID}
			byID[v.CompactionID] = b
			out = append(out, b)
		}
		if ev.Type == string(session.TypeCompactionEnd) {
			b.ends++
			b.err = v.Error
		}
	}
	return out
}

// runTurn sends a message and waits for its turn to complete.
func runTurn(t *testing.T, c *client.Client, id, text string) {
	t.Helper()
	n := countTurnEnds(events(t, c, id), "completed")
	// A session moving between replicas (a restart taking its lease back)
	// answers unavailable: send again under the same key, as clients do.
	key := client.NewKey()
	var err error
	poll.Eventually(t, "the send of "+text, func() bool {
		_, err = c.SendMessageKey(context.Background(), id, text, "followup", key)
		return client.CodeOf(err) != "unavailable"
	}, poll.Within(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, "the turn after "+text, func() bool {
		return countTurnEnds(events(t, c, id), "completed") > n
	}, poll.Within(30*time.Second))
}

// dumpTypes lists a log's event types, with the data of compaction events.
func dumpTypes(evs []client.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "%d %s", ev.Seq, ev.Type)
		if strings.HasPrefix(ev.Type, "compaction/") {
			fmt.Fprintf(&b, " %s", ev.Data)
		}
		b.WriteByte('\n')
	}
	return b.String()
}
