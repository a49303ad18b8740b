package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"harness/internal/driver"
)

// Replica holds the series of a replica on PostgreSQL (docs/deploy.md
// "Metrics"): leases, takeovers, forwards, fencing refusals, the
// notification listener and mirror lag. A process without replicas
// (SQLite) never registers them, so its /metrics has none of them.
type Replica struct {
	acquired  *prometheus.CounterVec
	lost      *prometheus.CounterVec
	released  *prometheus.CounterVec
	takeovers prometheus.Counter
	takeover  prometheus.Histogram
	forwards  *prometheus.CounterVec
	fenced    prometheus.Counter
	listener  prometheus.Gauge
	reconnect prometheus.Counter
	mirrorLag prometheus.Histogram
}

// Lease acquisition reasons.
const (
	AcquiredTakeover = "takeover" // the takeover loop took an orphaned session
	AcquiredOpen     = "open"     // a session created, loaded or resumed here
)

// Lease release reasons.
const (
	ReleasedUnload   = "unload"   // idle unload, deletion, a failed load
	ReleasedShutdown = "shutdown" // the process is shutting down
)

// Forward kinds and outcomes.
const (
	ForwardCommand = "command" // a REST command
	ForwardRead    = "read"    // a REST read or a page
	ForwardSocket  = "socket"  // a WebSocket protocol command
	ForwardOK      = "ok"      // the owner answered (whatever its status)
	ForwardFailed  = "failed"  // the owner could not be reached or timed out
)

// RegisterReplica registers the replica series; held is read at scrape
// time (the leases this replica holds). Call it once, on a replica.
func (m *Metrics) RegisterReplica(held func() int) *Replica {
	r := &Replica{
		acquired: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "harness_lease_acquisitions_total", Help: "Session leases this replica took, by reason (open, takeover).",
		}, []string{"reason"}),
		lost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "harness_lease_losses_total", Help: "Session leases this replica lost while its agent ran, by reason (taken, unrenewed, fenced).",
		}, []string{"reason"}),
		released: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "harness_lease_releases_total", Help: "Session leases this replica gave up, by reason (unload, shutdown).",
		}, []string{"reason"}),
		takeovers: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "harness_takeovers_total", Help: "Orphaned sessions (their replica stopped renewing) this replica took over.",
		}),
		takeover: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "harness_takeover_seconds", Help: "From an orphaned lease's expiry to this replica holding it with the agent loaded.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 12),
		}),
		forwards: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "harness_forwards_total", Help: "Requests forwarded to the replica that owns the session, by kind (command, read, socket) and outcome (ok, failed).",
		}, []string{"kind", "outcome"}),
		fenced: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "harness_fencing_refusals_total", Help: "Appends the database refused because the session's lease epoch moved on.",
		}),
		listener: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "harness_listener_up", Help: "1 while the LISTEN connection to PostgreSQL is up.",
		}),
		reconnect: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "harness_listener_reconnects_total", Help: "Connections of the LISTEN listener after its first.",
		}),
		mirrorLag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "harness_mirror_lag_seconds", Help: "Age of the newest event a mirror read, when it read it (owner's append to mirror).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}),
	}
	m.reg.MustRegister(r.acquired, r.lost, r.released, r.takeovers, r.takeover, r.forwards, r.fenced, r.listener, r.reconnect, r.mirrorLag,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "harness_leases_held", Help: "Session leases this replica holds.",
		}, func() float64 { return float64(held()) }))
	// Every label value shows from the start (at 0), so rates and alerts
	// need no absent() guards.
	for _, v := range []string{AcquiredOpen, AcquiredTakeover} {
		r.acquired.WithLabelValues(v)
	}
	for _, v := range []driver.LeaseLoss{driver.LeaseTaken, driver.LeaseUnrenewed, driver.LeaseFenced} {
		r.lost.WithLabelValues(string(v))
	}
	for _, v := range []string{ReleasedUnload, ReleasedShutdown} {
		r.released.WithLabelValues(v)
	}
	for _, k := range []string{ForwardCommand, ForwardRead, ForwardSocket} {
		for _, o := range []string{ForwardOK, ForwardFailed} {
			r.forwards.WithLabelValues(k, o)
		}
	}
	return r
}

// LeaseAcquired counts a lease taken.
func (r *Replica) LeaseAcquired(reason string) { r.acquired.WithLabelValues(reason).Inc() }

// LeaseLost counts a lease lost under a running agent.
func (r *Replica) LeaseLost(why driver.LeaseLoss) { r.lost.WithLabelValues(string(why)).Inc() }

// LeaseReleased counts a lease given up.
func (r *Replica) LeaseReleased(reason string) { r.released.WithLabelValues(reason).Inc() }

// TakenOver counts a takeover and how long the session had no owner.
func (r *Replica) TakenOver(took time.Duration) {
	r.takeovers.Inc()
	r.takeover.Observe(max(took, 0).Seconds())
}

// Forwarded counts a request forwarded to a session's owner.
func (r *Replica) Forwarded(kind, outcome string) { r.forwards.WithLabelValues(kind, outcome).Inc() }

// Fenced counts an append refused under a stale lease epoch.
func (r *Replica) Fenced() { r.fenced.Inc() }

// ListenerUp reports the listener (re)connected; first is its first
// connection.
func (r *Replica) ListenerUp(first bool) {
	r.listener.Set(1)
	if !first {
		r.reconnect.Inc()
	}
}

// ListenerDown reports the listener's connection dropped.
func (r *Replica) ListenerDown() { r.listener.Set(0) }

// MirrorLag records how old the newest event a mirror read was. Owner
// and mirror stamp with their own clocks: a negative age (clock skew)
// counts as 0.
func (r *Replica) MirrorLag(age time.Duration) { r.mirrorLag.Observe(max(age, 0).Seconds()) }
