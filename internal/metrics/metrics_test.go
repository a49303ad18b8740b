package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

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
