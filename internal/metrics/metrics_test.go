package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"harness/internal/driver"
	"harness/internal/llm"
	"harness/internal/session"
)

func TestMetricsExposition(t *testing.T) {
	t.Parallel()
	m := New(Sources{
		LiveSessions:    func() int { return 3 },
		RunningSessions: func() int { return 1 },
		WSConnections:   func() int { return 7 },
		WSCuts:          func() uint64 { return 2 },
		WSFrames:        func() uint64 { return 40 },
		WriterPending:   func() int { return 0 },
	})
	o := m.Observer()
	o.TurnEnded(session.ReasonCompleted)
	o.TurnEnded(session.ReasonCompleted)
	o.TurnEnded(session.ReasonError)
	o.RequestDone("deepseek", "", 120*time.Millisecond)
	o.RequestDone("deepseek", llm.CodeRateLimit, 10*time.Millisecond)
	o.ToolDone("bash", "ok")
	m.OnBatch(40, 2*time.Millisecond)

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	text := string(body)
	for _, want := range []string{
		`harness_turns_total{reason="completed"} 2`,
		`harness_turns_total{reason="error"} 1`,
		`harness_model_requests_total{code="ok",provider="deepseek"} 1`,
		`harness_model_requests_total{code="RATE_LIMIT",provider="deepseek"} 1`,
		`harness_tool_calls_total{outcome="ok",tool="bash"} 1`,
		`harness_events_appended_total 40`,
		`harness_writer_batch_events_count 1`,
		`harness_sessions_live 3`,
		`harness_sessions_running 1`,
		`harness_ws_connections 7`,
		`harness_ws_send_queue_cuts_total 2`,
		`harness_ws_frames_written_total 40`,
		`go_goroutines`,
		`process_resident_memory_bytes`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("exposition lacks %q", want)
		}
	}
}

// scrape is the exposition text of m.
func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	return string(body)
}

// A process without replicas shows no replica series; a replica shows
// every one, at zero before anything happened, and counts what it is
// told.
func TestReplicaSeries(t *testing.T) {
	t.Parallel()
	single := New(Sources{})
	if text := scrape(t, single); strings.Contains(text, "harness_lease") || strings.Contains(text, "harness_forwards") {
		t.Fatalf("replica series without replicas:\n%s", text)
	}

	m := New(Sources{})
	r := m.RegisterReplica(func() int { return 2 })
	zero := scrape(t, m)
	for _, want := range []string{
		`harness_leases_held 2`,
		`harness_lease_acquisitions_total{reason="takeover"} 0`,
		`harness_lease_losses_total{reason="fenced"} 0`,
		`harness_lease_releases_total{reason="shutdown"} 0`,
		`harness_forwards_total{kind="socket",outcome="failed"} 0`,
		`harness_takeovers_total 0`,
		`harness_takeover_seconds_count 0`,
		`harness_fencing_refusals_total 0`,
		`harness_listener_up 0`,
		`harness_listener_reconnects_total 0`,
		`harness_mirror_lag_seconds_count 0`,
	} {
		if !strings.Contains(zero, want) {
			t.Errorf("fresh exposition lacks %q", want)
		}
	}

	r.LeaseAcquired(AcquiredOpen)
	r.LeaseAcquired(AcquiredTakeover)
	r.LeaseLost(driver.LeaseTaken)
	r.LeaseReleased(ReleasedUnload)
	r.TakenOver(3 * time.Second)
	r.Forwarded(ForwardCommand, ForwardOK)
	r.Forwarded(ForwardRead, ForwardFailed)
	r.Fenced()
	r.ListenerUp(true)
	r.ListenerDown()
	r.ListenerUp(false)
	r.MirrorLag(-time.Second) // the owner's clock ahead: counted as 0
	text := scrape(t, m)
	for _, want := range []string{
		`harness_lease_acquisitions_total{reason="open"} 1`,
		`harness_lease_acquisitions_total{reason="takeover"} 1`,
		`harness_lease_losses_total{reason="taken"} 1`,
		`harness_lease_releases_total{reason="unload"} 1`,
		`harness_takeovers_total 1`,
		`harness_takeover_seconds_sum 3`,
		`harness_forwards_total{kind="command",outcome="ok"} 1`,
		`harness_forwards_total{kind="read",outcome="failed"} 1`,
		`harness_fencing_refusals_total 1`,
		`harness_listener_up 1`,
		`harness_listener_reconnects_total 1`,
		`harness_mirror_lag_seconds_sum 0`,
		`harness_mirror_lag_seconds_count 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("exposition lacks %q", want)
		}
	}
}
