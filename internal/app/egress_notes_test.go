package app

import (
	"fmt"
	"testing"
	"time"
)

// A session's log gets one note per destination a minute and at most
// egressNotesPerMinute in all; the next minute starts afresh; sessions do
// not share a budget.
func TestEgressNotesAreRateLimited(t *testing.T) {
	t.Parallel()
	n := &egressNotes{windows: map[string]*noteWindow{}}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if !n.admit("s1", "127.0.0.1:5432 (loopback)", t0) || n.admit("s1", "127.0.0.1:5432 (loopback)", t0.Add(time.Second)) {
		t.Fatal("the same destination twice in a minute")
	}
	admitted := 1
	for i := range 100 {
		if n.admit("s1", fmt.Sprintf("10.0.0.%d:80 (private)", i), t0.Add(2*time.Second)) {
			admitted++
		}
	}
	if admitted != egressNotesPerMinute {
		t.Errorf("%d notes in a minute, want %d", admitted, egressNotesPerMinute)
	}
	if !n.admit("s2", "127.0.0.1:5432 (loopback)", t0.Add(3*time.Second)) {
		t.Error("another session was limited by the first's budget")
	}
	if !n.admit("s1", "127.0.0.1:5432 (loopback)", t0.Add(egressNoteWindow+time.Second)) {
		t.Error("the next minute did not start afresh")
	}
}
