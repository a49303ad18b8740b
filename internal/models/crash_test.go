package models

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"harness/internal/session"
	"harness/internal/testkit/poll"
)

// TestCrashDurability kills a writing process with SIGKILL and checks that
// every flushed event survived and the stored log is a clean prefix.
func TestCrashDurability(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "data", "harness.db")
	cmd, _, line := startHelper(t, "crash", path, "flushed ")
	var flushed int64
	if _, err := fmt.Sscanf(line, "flushed %d", &flushed); err != nil {
		t.Fatalf("helper said %q: %v", line, err)
	}

	// Let the child get well into its unflushed appends, so the kill lands
	// mid-stream, then kill it without warning.
	peek, err := sql.Open("sqlite3", "file:"+path+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	// Past the deadline the kill lands anyway: the checks below still hold.
	poll.Wait(t, func() bool {
		var head int64
		err := peek.QueryRow("SELECT head FROM sessions WHERE id = ?", crashSession).Scan(&head)
		return err == nil && head > flushed+500
	}, poll.Within(10*time.Second), poll.Every(2*time.Millisecond))
	_ = peek.Close()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	db, err := Open(t.Context(), testLogger(t), Config{DSN: path})
	if err != nil {
		t.Fatalf("reopen after crash: %v", err)
	}
	defer db.Close()
	s := NewStore(testLogger(t), db, nil)
	raw, err := s.EventsRaw(t.Context(), crashSession, -1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(raw)) < flushed {
		t.Fatalf("%d events after the crash, want at least the %d flushed", len(raw), flushed)
	}
	for i, r := range raw {
		var ev session.Event
		if err := json.Unmarshal(r.Body, &ev); err != nil {
			t.Fatalf("row %d torn: %v", i, err)
		}
		if r.Seq != int64(i) || ev.Seq != int64(i) {
			t.Fatalf("row %d has seq %d (body %d): not contiguous", i, r.Seq, ev.Seq)
		}
		if !bytes.Equal(r.Body, mustMarshal(t, variedEvent(crashSession, int64(i)))) {
			t.Fatalf("row %d body differs from what was appended", i)
		}
	}
	head, err := s.Head(t.Context(), crashSession)
	if err != nil || head != int64(len(raw))-1 {
		t.Fatalf("head = %d (%v), want %d: head and rows must commit together", head, err, len(raw)-1)
	}
	t.Logf("flushed %d, survived %d", flushed, len(raw))
}
