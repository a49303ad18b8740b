package main

import (
	"encoding/json"
	"fmt"
	"os"
	"text/tabwriter"
)

type report struct {
	Target          string         `json:"target"`
	Config          reportConfig   `json:"config"`
	ColdStartMs     float64        `json:"coldStartMs,omitempty"`
	IdleRSSMiB      float64        `json:"idleRssMiB,omitempty"`
	ElapsedSec      float64        `json:"elapsedSec"`
	Turns           int            `json:"turns"`
	EventsPersisted int64          `json:"eventsPersisted"`
	PersistedPerSec float64        `json:"eventsPersistedPerSec"`
	EventsDelivered int64          `json:"eventsDelivered"`
	DeliveredPerSec float64        `json:"eventsDeliveredPerSec"`
	Latency         latencyFigures `json:"chunkLatencyMs"`
	// PerTarget splits the latency by the replica the viewers were on
	// (several targets); the first owns the sessions.
	PerTarget []targetFigures `json:"perTarget,omitempty"`
	Replay    replayFigures   `json:"replay"`
	Reconnect replayFigures   `json:"reconnect"`
	// Export is the REST export of the replayed session's events (pages of
	// 5,000); ReplayVsExport is replay time over export time.
	Export           replayFigures `json:"restExport"`
	ReplayVsExport   float64       `json:"replayVsExport,omitempty"`
	ServerPeakRSSMiB float64       `json:"serverPeakRssMiB"`
	ServerCPUCores   float64       `json:"serverCpuCores"`
	// ClientCPUCores is this process's CPU over the load: the viewers'
	// side, which competes with the server when both run on one machine.
	ClientCPUCores float64 `json:"clientCpuCores"`
	// ServerCPUMilliPerViewer is the server's CPU over the load divided by
	// the viewer connections, in millicores.
	ServerCPUMilliPerViewer float64 `json:"serverCpuMilliPerViewer,omitempty"`
	// ServerFrames is the WebSocket frames the server wrote over the load,
	// ServerCPUMicrosPerFrame its CPU over them.
	ServerFrames int64 `json:"serverFrames,omitempty"`
	// ServerWrites is the socket writes those frames took.
	ServerWrites            int64   `json:"serverWrites,omitempty"`
	ServerCPUMicrosPerFrame float64 `json:"serverCpuMicrosPerFrame,omitempty"`
	// Takeover: the owner was killed (-kill-owner).
	Takeover        *takeoverFigures `json:"takeover,omitempty"`
	Cuts            int              `json:"cuts"`
	ServerCutsTotal int              `json:"serverCutsTotal"`
	Errors          int              `json:"errors"`
	ErrorSamples    []string         `json:"errorSamples,omitempty"`
}

type reportConfig struct {
	Sessions int    `json:"sessions"`
	Viewers  int    `json:"viewersPerSession"`
	Rate     int    `json:"chunksPerSecond"`
	Chunks   int    `json:"chunksPerTurn"`
	Turns    int    `json:"turnsPerSession,omitempty"`
	Duration string `json:"duration"`
	Prompt   string `json:"prompt"`
	HTML     bool   `json:"html"`
	Batch    bool   `json:"batch"`
	Raw      bool   `json:"raw"` // raw viewers (raw.go), not client.Follow
}

type latencyFigures struct {
	Samples int     `json:"samples"`
	P50     float64 `json:"p50"`
	P95     float64 `json:"p95"`
	P99     float64 `json:"p99"`
	Max     float64 `json:"max"`
	Source  string  `json:"source"`
}

type targetFigures struct {
	URL     string         `json:"url"`
	Owner   bool           `json:"owner"`
	Latency latencyFigures `json:"chunkLatencyMs"`
}

type replayFigures struct {
	Events int     `json:"events"`
	Ms     float64 `json:"ms"`
}

func (r report) print(asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	row := func(k string, format string, args ...any) {
		fmt.Fprintf(w, "%s\t%s\n", k, fmt.Sprintf(format, args...))
	}
	row("target", "%s", r.Target)
	row("load", "%d sessions x %d viewers, %d chunks/s, %d chunks/turn, %s, html %v, batch %v, raw %v", r.Config.Sessions, r.Config.Viewers, r.Config.Rate, r.Config.Chunks, r.Config.Duration, r.Config.HTML, r.Config.Batch, r.Config.Raw)
	if r.ColdStartMs > 0 {
		row("cold start to ready", "%.0f ms", r.ColdStartMs)
	}
	if r.IdleRSSMiB > 0 {
		row("idle RSS", "%.1f MiB", r.IdleRSSMiB)
	}
	row("turns", "%d in %.1f s", r.Turns, r.ElapsedSec)
	row("events persisted", "%d (%.0f/s)", r.EventsPersisted, r.PersistedPerSec)
	row("events delivered", "%d (%.0f/s)", r.EventsDelivered, r.DeliveredPerSec)
	row("chunk latency", "p50 %.2f ms, p95 %.2f ms, p99 %.2f ms, max %.2f ms (%d samples, %s)",
		r.Latency.P50, r.Latency.P95, r.Latency.P99, r.Latency.Max, r.Latency.Samples, r.Latency.Source)
	for _, t := range r.PerTarget {
		role := "non-owner"
		if t.Owner {
			role = "owner"
		}
		row("  viewers on "+t.URL, "%s: p50 %.2f ms, p99 %.2f ms, max %.2f ms (%d samples)", role, t.Latency.P50, t.Latency.P99, t.Latency.Max, t.Latency.Samples)
	}
	row("replay (fresh subscriber)", "%d events in %.1f ms", r.Replay.Events, r.Replay.Ms)
	row("reconnect (since = head/2)", "%d events in %.1f ms", r.Reconnect.Events, r.Reconnect.Ms)
	row("REST export (same session)", "%d events in %.1f ms (replay/export %.2f)", r.Export.Events, r.Export.Ms, r.ReplayVsExport)
	row("server peak RSS", "%.1f MiB", r.ServerPeakRSSMiB)
	row("server CPU", "%.2f cores (%.3f millicores per viewer)", r.ServerCPUCores, r.ServerCPUMilliPerViewer)
	row("client CPU (this process)", "%.2f cores", r.ClientCPUCores)
	if r.ServerFrames > 0 {
		row("server frames", "%d in %d socket writes, %.1f µs of CPU each", r.ServerFrames, r.ServerWrites, r.ServerCPUMicrosPerFrame)
	}
	if t := r.Takeover; t != nil {
		row("owner killed: takeover", "%d of %d sessions moved, p50 %.0f ms, p100 %.0f ms after the SIGKILL; %d refusals", t.Moved, t.Sessions, t.P50Ms, t.P100Ms, t.Refusals)
	}
	row("viewers cut (slow consumer)", "%d (server total %d)", r.Cuts, r.ServerCutsTotal)
	row("errors", "%d %v", r.Errors, r.ErrorSamples)
	return w.Flush()
}
