// Package metrics exposes Harness's Prometheus metrics: live and running
// sessions, turns, model requests and failures by code, tool calls by name
// and outcome, events appended, writer batches, WebSocket connections and
// send-queue cuts; on PostgreSQL replicas also leases, takeovers, forwards,
// fencing refusals, the notification listener and mirror lag (replica.go).
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"harness/internal/driver"
	"harness/internal/llm"
	"harness/internal/session"
)

// Metrics owns a private registry (no global state) and the collectors the
// parts of Harness report to.
type Metrics struct {
	reg *prometheus.Registry

	turns         *prometheus.CounterVec
	requests      *prometheus.CounterVec
	requestTime   *prometheus.HistogramVec
	tools         *prometheus.CounterVec
	batchEvents   prometheus.Histogram
	batchDuration prometheus.Histogram
	eventsWritten prometheus.Counter
	egressRefused *prometheus.CounterVec
	egressAllowed prometheus.Counter
}

// Sources are read when Prometheus scrapes (gauges of current state).
type Sources struct {
	LiveSessions    func() int
	RunningSessions func() int
	WSConnections   func() int
	WSCuts          func() uint64 // subscribers cut for falling behind, total
	WSFrames        func() uint64 // WebSocket frames written, total
	WSWrites        func() uint64 // socket writes of those frames, total
	WriterPending   func() int
	ImportsRunning  func() int // session imports in progress
}

// New registers every collector.
func New(src Sources) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.turns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "harness_turns_total", Help: "Turns ended, by end reason.",
	}, []string{"reason"})
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "harness_model_requests_total", Help: "Model request attempts by provider and result code (ok on success).",
	}, []string{"provider", "code"})
	m.requestTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "harness_model_request_seconds", Help: "Duration of model request attempts, first byte to last chunk.",
		Buckets: prometheus.ExponentialBuckets(0.05, 2, 12),
	}, []string{"provider"})
	m.tools = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "harness_tool_calls_total", Help: "Tool results by tool name and outcome (ok, error, aborted).",
	}, []string{"tool", "outcome"})
	m.batchEvents = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "harness_writer_batch_events", Help: "Events per committed writer transaction.",
		Buckets: prometheus.ExponentialBuckets(1, 4, 8),
	})
	m.batchDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "harness_writer_batch_seconds", Help: "Commit time of writer transactions.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
	})
	m.eventsWritten = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "harness_events_appended_total", Help: "Session events committed to the database.",
	})
	m.egressRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "harness_egress_refused_total", Help: "Connections the sandboxes' egress proxy refused, by reason (loopback, private, server, ...).",
	}, []string{"reason"})
	m.egressAllowed = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "harness_egress_allowed_total", Help: "Connections the sandboxes' egress proxy made.",
	})
	m.reg.MustRegister(m.egressRefused, m.egressAllowed)
	m.reg.MustRegister(m.turns, m.requests, m.requestTime, m.tools, m.batchEvents, m.batchDuration, m.eventsWritten,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	gauge := func(name, help string, fn func() int) {
		if fn != nil {
			m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help},
				func() float64 { return float64(fn()) }))
		}
	}
	gauge("harness_sessions_live", "Sessions with a loaded agent.", src.LiveSessions)
	gauge("harness_sessions_running", "Sessions whose agent is running a turn.", src.RunningSessions)
	gauge("harness_ws_connections", "Open WebSocket connections.", src.WSConnections)
	gauge("harness_writer_pending_events", "Events waiting for the batched writer.", src.WriterPending)
	gauge("harness_imports_running", "Session imports in progress (at most 2; more are refused with 503).", src.ImportsRunning)
	if src.WSCuts != nil {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "harness_ws_send_queue_cuts_total", Help: "WebSocket subscribers cut for falling behind.",
		}, func() float64 { return float64(src.WSCuts()) }))
	}
	if src.WSFrames != nil {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "harness_ws_frames_written_total", Help: "WebSocket data frames written to clients.",
		}, func() float64 { return float64(src.WSFrames()) }))
	}
	if src.WSWrites != nil {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "harness_ws_writes_total", Help: "Socket writes of WebSocket data frames (frames queued together share one).",
		}, func() float64 { return float64(src.WSWrites()) }))
	}
	return m
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Observer returns the driver observer feeding the turn, request and tool
// metrics.
func (m *Metrics) Observer() driver.Observer { return observer{m} }

// OnBatch is the batched writer's OnBatch callback.
func (m *Metrics) OnBatch(events int, took time.Duration) {
	m.batchEvents.Observe(float64(events))
	m.batchDuration.Observe(took.Seconds())
	m.eventsWritten.Add(float64(events))
}

// EgressRefused counts a connection the egress proxy refused.
func (m *Metrics) EgressRefused(reason string) { m.egressRefused.WithLabelValues(reason).Inc() }

// EgressAllowed counts a connection the egress proxy made.
func (m *Metrics) EgressAllowed() { m.egressAllowed.Inc() }

type observer struct{ m *Metrics }

func (o observer) TurnEnded(r session.ReasonKind) { o.m.turns.WithLabelValues(string(r)).Inc() }

func (o observer) RequestDone(provider string, code llm.Code, took time.Duration) {
	c := string(code)
	if c == "" {
		c = "ok"
	}
	o.m.requests.WithLabelValues(provider, c).Inc()
	o.m.requestTime.WithLabelValues(provider).Observe(took.Seconds())
}

func (o observer) ToolDone(name, outcome string) { o.m.tools.WithLabelValues(name, outcome).Inc() }
