package app

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"harness/internal/egress"
	"harness/internal/metrics"
	"harness/internal/session"
)

// A network-on sandbox reaches out only through the egress proxy, under
// web_fetch's policy (one allow-list, the server's own addresses never).
// Refusals are counted in /metrics and noted in the session's log.

// Notes in a session's log, per minute: a hostile loop must not flood it.
const (
	egressNotesPerMinute = 20
	egressNoteWindow     = time.Minute
)

// setupEgress starts the proxy the sandboxes connect to.
func (a *App) setupEgress() (*egress.Proxy, error) {
	notes := &egressNotes{
		metrics: a.Metrics,
		note: func(id string, ev session.NetworkRefused) {
			a.Log.Info("network refused", "session", id, "host", ev.Host, "port", ev.Port, "address", ev.Address, "reason", ev.Reason)
			if a.Manager == nil {
				return
			}
			// Only a session loaded here is noted (a replica's proxy
			// serves the sandboxes it runs, so that is the usual case).
			if ag, ok := a.Manager.Lookup(id); ok {
				if err := ag.NoteNetwork(ev); err != nil {
					a.Log.Warn("note a refused connection", "session", id, "err", err)
				}
			}
		},
		windows: map[string]*noteWindow{},
	}
	p, err := egress.NewProxy(egress.ProxyDeps{
		Log: a.Log, Dir: filepath.Join(a.Config.DataDir, "egress"),
		Hosts: a.fetchHosts, Reserved: a.reserved.contains, Recorder: notes,
	})
	if err != nil {
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	return p, nil
}

// egressNotes is the proxy's recorder: every refusal is counted, and the
// admitted ones are logged and noted in the session.
type egressNotes struct {
	metrics *metrics.Metrics
	note    func(id string, ev session.NetworkRefused)

	mu      sync.Mutex
	windows map[string]*noteWindow // by session
}

// noteWindow is a session's notes in the current minute.
type noteWindow struct {
	start time.Time
	n     int
	seen  map[string]bool // destinations noted
}

func (n *egressNotes) Refused(_ context.Context, id string, r *egress.Refusal) {
	n.metrics.EgressRefused(string(r.Reason))
	if !n.admit(id, r.Short(), time.Now()) {
		return
	}
	ev := session.NetworkRefused{Host: r.Host, Port: int(r.Port), Reason: string(r.Reason)}
	if r.Addr.IsValid() {
		ev.Address = r.Addr.String()
	}
	n.note(id, ev)
}

func (n *egressNotes) Allowed(context.Context, string) { n.metrics.EgressAllowed() }

// admit reports whether a refusal of dest may be noted in session id's log
// now: once per destination and egressNotesPerMinute in all per window.
func (n *egressNotes) admit(id, dest string, now time.Time) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	w := n.windows[id]
	if w == nil || now.Sub(w.start) >= egressNoteWindow {
		if len(n.windows) > 1024 {
			for k, old := range n.windows {
				if now.Sub(old.start) >= egressNoteWindow {
					delete(n.windows, k)
				}
			}
		}
		w = &noteWindow{start: now, seen: map[string]bool{}}
		n.windows[id] = w
	}
	if w.seen[dest] || w.n >= egressNotesPerMinute {
		return false
	}
	w.seen[dest] = true
	w.n++
	return true
}
