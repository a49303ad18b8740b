package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestSummaryListsSkipsWithReasonsAndFailures(t *testing.T) {
	evs := []event{
		{Action: "start", Package: "h/a"},
		{Action: "run", Package: "h/a", Test: "TestPG"},
		{Action: "output", Package: "h/a", Test: "TestPG", Output: "=== RUN   TestPG\n"},
		{Action: "output", Package: "h/a", Test: "TestPG", Output: "    pg_test.go:12: PostgreSQL: HARNESS_TEST_POSTGRES_DSN is not set\n"},
		{Action: "output", Package: "h/a", Test: "TestPG", Output: "--- SKIP: TestPG (0.00s)\n"},
		{Action: "skip", Package: "h/a", Test: "TestPG"},
		{Action: "run", Package: "h/a", Test: "TestOK"},
		{Action: "output", Package: "h/a", Test: "TestOK", Output: "noise that must not be printed\n"},
		{Action: "pass", Package: "h/a", Test: "TestOK"},
		{Action: "pass", Package: "h/a", Elapsed: 1.5},
		{Action: "start", Package: "h/b"},
		{Action: "run", Package: "h/b", Test: "TestBad"},
		{Action: "output", Package: "h/b", Test: "TestBad", Output: "    bad_test.go:3: want 2, got 3\n"},
		{Action: "fail", Package: "h/b", Test: "TestBad"},
		{Action: "fail", Package: "h/b", Elapsed: 0.2},
	}
	var out bytes.Buffer
	s := newSummary(&out)
	now := time.Unix(0, 0)
	for _, ev := range evs {
		// Round-trip through JSON, as the events arrive.
		b, _ := json.Marshal(ev)
		var got event
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		s.add(got, now)
	}
	if s.report() {
		t.Error("report says the run passed; a test failed")
	}
	text := out.String()
	for _, want := range []string{
		"ok    h/a  1.5s",
		"FAIL  h/b  0.2s",
		"--- output of h/b TestBad\n    bad_test.go:3: want 2, got 3",
		"2 packages, 1 tests passed, 1 skipped, 1 failed",
		"h/a TestPG: pg_test.go:12: PostgreSQL: HARNESS_TEST_POSTGRES_DSN is not set",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("summary lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "noise") {
		t.Errorf("a passing test's output was printed:\n%s", text)
	}
}

func TestHeartbeatNamesWhatStillRuns(t *testing.T) {
	var out bytes.Buffer
	s := newSummary(&out)
	t0 := time.Unix(100, 0)
	s.add(event{Action: "start", Package: "h/slow"}, t0)
	s.add(event{Action: "start", Package: "h/done"}, t0)
	s.add(event{Action: "pass", Package: "h/done"}, t0)
	s.heartbeat(t0.Add(95 * time.Second))
	if got := out.String(); !strings.Contains(got, "still running: h/slow (95s)") || strings.Contains(got, "h/done (") {
		t.Errorf("heartbeat = %q", got)
	}
}
