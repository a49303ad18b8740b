package main

import (
	"bytes"
	"context"
	"database/sql"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"harness/client"
	"harness/internal/session"
	"harness/internal/testkit/poll"
)

// A server whose database another process holds locked (every commit waits
// on busy_timeout) exits within its shutdown budget plus 1 s of SIGTERM,
// the bound issue 26 sets. Once the lock is gone a restart finds the log
// whole: every event the server reported stored is there unchanged, seqs
// are contiguous, the open turn is closed as interrupted, and the queued
// message runs.
//
// SQLite only: the fault is SQLite's file lock held by another process.
// PostgreSQL has no such lock; a replica whose commits stall is fenced
// and taken over instead (TestReplicaPausedOwnerIsFenced).
func TestShutdownWithinBudgetWhileDatabaseLocked(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns servers; skipped with -short")
	}
	t.Parallel()
	const budget = 2 * time.Second
	dir := t.TempDir()
	token := newToken(t, dir)
	srv := startServer(t, dir, "HARNESS_SHUTDOWN_TIMEOUT="+budget.String())
	ctx := context.Background()
	c := client.New(srv.URL, client.WithToken(token))

	s, err := c.CreateSession(ctx, client.NewSession{Title: "shutdown budget", Mode: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	var acked []string
	for _, p := range []string{"long: 3000", "queued behind the long reply"} {
		id, err := c.SendMessage(ctx, s.ID, p, "followup")
		if err != nil {
			t.Fatal(err)
		}
		acked = append(acked, id)
	}
	poll.Eventually(t, "the reply to stream", func() bool {
		return slices.ContainsFunc(events(t, c, s.ID), func(e client.Event) bool { return e.Type == "assistant/chunk" })
	}, poll.Within(30*time.Second))

	lock := lockDatabase(t, filepath.Join(dir, "harness.db"))
	defer lock.unlock()
	// What is stored now stays stored: nothing commits past the lock. The
	// events up to the stored head are the ones the server has made
	// durable; those after it are only in its memory.
	head := lock.head(t, s.ID)
	stored := events(t, c, s.ID)[:head+1]
	t.Logf("stored head at the lock: seq %d", head)
	// The stream goes on against the locked database: events wait in the
	// writer.
	poll.Eventually(t, "events to wait for the locked database", func() bool {
		return writerPending(t, srv.URL) > 0
	}, poll.Within(30*time.Second))

	// A send now cannot be made durable: its request is still in flight
	// at the signal, and never acknowledged.
	unacked := make(chan error, 1)
	go func() {
		_, err := c.SendMessage(ctx, s.ID, "sent while the database is locked", "followup")
		unacked <- err
	}()

	start := time.Now()
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exit, exited := srv.exitErr(budget + time.Second)
	took := time.Since(start)
	if !exited {
		t.Fatalf("the server had not exited %v after SIGTERM (budget %v)\n%s", took.Round(time.Millisecond), budget, srv.logs)
	}
	t.Logf("SIGTERM to exit: %v (budget %v), exit: %v", took.Round(time.Millisecond), budget, exit)
	if err := <-unacked; err == nil {
		t.Fatal("a send was acknowledged while the database was locked")
	}
	logs := srv.logs.String()
	if !strings.Contains(logs, "shutdown budget spent") {
		t.Fatalf("the shutdown abandoned nothing: was the database locked?\n%s", logs)
	}
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "shutdown budget spent") || strings.Contains(line, `msg=stopped`) {
			t.Log(line)
		}
	}

	lock.unlock()
	srv = startServer(t, dir)
	c = client.New(srv.URL, client.WithToken(token))
	poll.Eventually(t, "the queued message to run", func() bool {
		evs := events(t, c, s.ID)
		return countTurnEnds(evs, "completed") >= 1 && hasUserMessage(evs, acked[1])
	}, poll.Within(30*time.Second))
	evs := events(t, c, s.ID)
	for i, e := range evs {
		if e.Seq != int64(i) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
	}
	for i, e := range stored {
		if i >= len(evs) || evs[i].Type != e.Type || !bytes.Equal(evs[i].Data, e.Data) {
			t.Fatalf("stored event seq %d changed or lost after the restart:\n was %s %s\n now %s %s", e.Seq, e.Type, e.Data, evs[min(i, len(evs)-1)].Type, evs[min(i, len(evs)-1)].Data)
		}
	}
	if err := session.CheckInvariants(toSession(t, evs)); err != nil {
		t.Fatal(err)
	}
	if n := countTurnEnds(evs, "interrupted"); n != 1 {
		t.Fatalf("%d interrupted turn ends, want exactly 1", n)
	}
	for _, id := range acked {
		if !inInbox(evs, id) {
			t.Fatalf("acknowledged message %s lost", id)
		}
	}
}

// dbLock holds SQLite's write lock on a database from this process (BEGIN
// EXCLUSIVE on its own connection): the server's commits wait on
// busy_timeout meanwhile.
type dbLock struct {
	db   *sql.DB
	conn *sql.Conn
	done bool
}

func lockDatabase(t *testing.T, path string) *dbLock {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), "BEGIN EXCLUSIVE"); err != nil {
		t.Fatalf("lock the database: %v", err)
	}
	return &dbLock{db: db, conn: conn}
}

// head is the session's stored head, read under the lock.
func (l *dbLock) head(t *testing.T, id string) int64 {
	t.Helper()
	var head int64
	if err := l.conn.QueryRowContext(context.Background(), "SELECT head FROM sessions WHERE id = ?", id).Scan(&head); err != nil {
		t.Fatalf("stored head: %v", err)
	}
	return head
}

func (l *dbLock) unlock() {
	if l.done {
		return
	}
	l.done = true
	_, _ = l.conn.ExecContext(context.Background(), "ROLLBACK")
	_ = l.conn.Close()
	_ = l.db.Close()
}

var pendingGauge = regexp.MustCompile(`(?m)^harness_writer_pending_events (\S+)$`)

// writerPending reads the events waiting for the batched writer from
// /metrics (served to local requests).
func writerPending(t *testing.T, url string) int {
	t.Helper()
	res, err := httpClient.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("metrics: %d %v", res.StatusCode, err)
	}
	m := pendingGauge.FindSubmatch(b)
	if m == nil {
		t.Fatalf("no writer gauge in /metrics:\n%s", b)
	}
	n, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}
