package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"harness/client"
	"harness/internal/models"
	"harness/internal/session"
	"harness/internal/testkit/poll"
)

// `harness events` next to a running server, on each backend: while the
// server runs it prints a prefix of the stored log; once the server is
// gone it prints exactly what the store's own load returns (seq, type,
// time, data and envelope), S2-compressed groups of deltas included;
// --since, --type and an id prefix select what they say; an unknown
// session exits 1 naming it. On SQLite the server still holds its locks
// afterwards: the read-only open took none of them away.
func TestEventsCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns servers; skipped with -short")
	}
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		token := b.token(t, dir)
		srv := startServer(t, dir, b.env...)
		ctx := t.Context()
		c := client.New(srv.URL, client.WithToken(token))
		s, err := c.CreateSession(ctx, client.NewSession{Title: "events"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.SendMessage(ctx, s.ID, "long: 300", "followup"); err != nil {
			t.Fatal(err)
		}
		poll.Eventually(t, "the turn to end", func() bool {
			return countTurnEnds(events(t, c, s.ID), "") >= 1
		}, poll.Within(60*time.Second))

		live, stderr, err := runEventsProc(dir, b, s.ID)
		if err != nil {
			t.Fatalf("events while the server runs: %v\n%s", err, stderr)
		}
		if b.name == "sqlite" {
			db := filepath.Join(dir, "harness.db")
			for _, f := range []string{db, db + "-shm"} {
				if heldPOSIXLocks(t, srv.cmd.Process.Pid, f) == 0 {
					t.Errorf("after `events` the server holds no POSIX lock on %s", filepath.Base(f))
				}
			}
		}
		srv.kill()

		want, s2Rows := storedLog(t, dir, b, s.ID)
		if s2Rows == 0 {
			t.Fatal("no S2-compressed row in log_rows: the test does not exercise the group decoding")
		}
		if n := countLines(want, "turn/end"); n != 1 {
			t.Fatalf("the stored log has %d turn/end, want 1", n)
		}
		gotLive := parseEventLines(t, live)
		if len(gotLive) > len(want) || countLines(gotLive, "turn/end") != 1 {
			t.Fatalf("while the server ran, events printed %d events (%d turn/end); the store holds %d", len(gotLive), countLines(gotLive, "turn/end"), len(want))
		}
		sameEventLines(t, "while the server ran", gotLive, want[:len(gotLive)])

		all, stderr, err := runEventsProc(dir, b, s.ID)
		if err != nil {
			t.Fatalf("events: %v\n%s", err, stderr)
		}
		sameEventLines(t, "events", parseEventLines(t, all), want)

		from := want[len(want)/2].Seq
		since, stderr, err := runEventsProc(dir, b, s.ID, "--since", strconv.FormatInt(from, 10))
		if err != nil {
			t.Fatalf("events --since: %v\n%s", err, stderr)
		}
		sameEventLines(t, "--since", parseEventLines(t, since), want[len(want)/2:])

		var ends []eventLine
		for _, e := range want {
			if e.Type == session.TypeTurnEnd {
				ends = append(ends, e)
			}
		}
		typed, stderr, err := runEventsProc(dir, b, "--type", "turn/end", s.ID[:8])
		if err != nil {
			t.Fatalf("events --type with an id prefix: %v\n%s", err, stderr)
		}
		sameEventLines(t, "--type turn/end", parseEventLines(t, typed), ends)

		out, stderr, err := runEventsProc(dir, b, "0123abcd-0000-4000-8000-000000000000")
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 || len(out) != 0 || !strings.Contains(stderr, "session 0123abcd-0000-4000-8000-000000000000: not found") {
			t.Fatalf("events on an unknown session: %v, stdout %q, stderr %q; want exit 1 saying not found", err, out, stderr)
		}
	})
}

// The command line of `events`, and a missing SQLite database: refused,
// and nothing is created.
func TestEventsCommandRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := cliConfigAt(t, dir)
	tests := []struct {
		name    string
		args    []string
		wantErr error  // errors.Is
		wantMsg string // substring of the error
	}{
		{"no session", []string{"events"}, errUsage, "want 1 argument"},
		{"two sessions", []string{"events", "a", "b"}, errUsage, "want 1 argument"},
		{"negative since", []string{"events", "a", "--since", "-1"}, errUsage, "--since -1"},
		{"bad since", []string{"events", "a", "--since", "x"}, errUsage, "invalid value"},
		{"unknown flag", []string{"events", "a", "--follow"}, errUsage, "follow"},
		{"no database", []string{"events", "a"}, fs.ErrNotExist, "harness.db"},
	}
	for _, tt := range tests {
		r := runCLI(t, cfg, "", tt.args...)
		if !r.handled || r.err == nil || !errors.Is(r.err, tt.wantErr) || !strings.Contains(r.err.Error(), tt.wantMsg) {
			t.Fatalf("%s: handled %v, err %v; want %v %q", tt.name, r.handled, r.err, tt.wantErr, tt.wantMsg)
		}
		if errors.Is(tt.wantErr, errUsage) && !strings.Contains(r.errOut, "events SESSION") {
			t.Fatalf("%s: the usage was not printed: %q", tt.name, r.errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "harness.db")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("events created the database: %v", err)
	}
}

// runEventsProc runs `harness events args...` for the server on dir, as its
// own process (the test binary as the server binary).
func runEventsProc(dir string, b backend, args ...string) (stdout []byte, stderr string, err error) {
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^$", "--", "events"}, args...)...)
	cmd.Env = append(os.Environ(), "HARNESS_TEST_SERVE=1", "HARNESS_DATA_DIR="+dir)
	cmd.Env = append(cmd.Env, b.env...)
	var errBuf bytes.Buffer
	cmd.Stderr = &errBuf
	out, err := cmd.Output()
	return out, errBuf.String(), err
}

// storedLog is the session's log as the store loads it, in the lines
// `events` prints, and how many of log_rows' rows are S2-compressed groups.
func storedLog(t *testing.T, dir string, b backend, id string) ([]eventLine, int) {
	t.Helper()
	cfg := models.Config{DSN: filepath.Join(dir, "harness.db")}
	if b.dsn != "" {
		cfg = models.Config{Driver: models.DriverPostgres, DSN: b.dsn}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	db, err := models.Open(ctx, nil, cfg)
	if err != nil {
		t.Fatalf("open the database: %v", err)
	}
	defer db.Close()
	evs, err := models.NewStore(nil, db, nil).EventsSince(ctx, id, -1, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]eventLine, len(evs))
	for i, ev := range evs {
		out[i] = eventLine{
			Seq: ev.Seq, Type: ev.Type, Data: ev.Data,
			Time:      time.UnixMilli(ev.Time).UTC().Format("2006-01-02T15:04:05.000Z07:00"),
			Ignorable: ev.Ignorable, SurfaceOp: ev.SurfaceOp, SourceEventSeqs: ev.SourceEventSeqs,
		}
	}
	var s2 int
	if err := db.R.WithContext(ctx).Raw(`SELECT count(*) FROM log_rows WHERE meta = 's'`).Scan(&s2).Error; err != nil {
		t.Fatal(err)
	}
	return out, s2
}

// parseEventLines parses `events` output strictly: one JSON object per
// line, no unknown field.
func parseEventLines(t *testing.T, out []byte) []eventLine {
	t.Helper()
	var evs []eventLine
	for i, line := range bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n")) {
		if len(line) == 0 {
			if len(out) == 0 {
				break
			}
			t.Fatalf("line %d is empty", i+1)
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		var e eventLine
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("line %d %q: %v", i+1, line, err)
		}
		evs = append(evs, e)
	}
	return evs
}

// sameEventLines compares printed events with the store's, field by field.
func sameEventLines(t *testing.T, what string, got, want []eventLine) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d events, the store has %d", what, len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		gj, _ := json.Marshal(g.SurfaceOp)
		wj, _ := json.Marshal(w.SurfaceOp)
		if g.Seq != w.Seq || g.Type != w.Type || g.Time != w.Time || !sameJSON(g.Data, w.Data) ||
			g.Ignorable != w.Ignorable || !bytes.Equal(gj, wj) || !slices.Equal(g.SourceEventSeqs, w.SourceEventSeqs) {
			gl, _ := json.Marshal(g)
			wl, _ := json.Marshal(w)
			t.Fatalf("%s: event %d is\n%s\nthe store has\n%s", what, i, gl, wl)
		}
	}
}

func countLines(evs []eventLine, typ session.Type) int {
	n := 0
	for _, e := range evs {
		if e.Type == typ {
			n++
		}
	}
	return n
}
