// Command loadgen drives a Harness server with concurrent sessions and
// viewers and reports throughput, latency, replay times and server
// resources.
//
// By default it starts its own server in a child process (a fresh data
// directory, the tick provider that stamps each chunk with its emission
// time, so latency is measured from the provider to the client frame with
// a shared clock). With -target it drives an existing server instead
// (any provider; latency then comes from each event's append time, in ms;
// its HARNESS_WS_MAX_SOCKETS must allow sessions × viewers sockets for the
// token's user).
//
//	go run ./cmd/loadgen -sessions 100 -viewers 1 -rate 50 -chunks 250 -duration 20s
//	go run ./cmd/loadgen -sessions 1 -viewers 500 -rate 50 -chunks 250 -duration 20s
//	go run ./cmd/loadgen -sessions 1 -viewers 1000 -rate 50 -chunks 250 -duration 20s -html
//	go run ./cmd/loadgen -sessions 1 -viewers 1 -rate 0 -chunks 10000 -turns 20
//	go run ./cmd/loadgen -target http://127.0.0.1:8080 -token hrn_... -prompt "long: 200"
//
// -floor measures what the machine allows at all for the same shape (plain
// TCP fan-out between two processes, nothing else), to read the figures
// against:
//
//	go run ./cmd/loadgen -floor -sessions 1 -viewers 1000 -rate 50 -duration 20s
//
// Replicas on PostgreSQL: -target takes several URLs (comma-separated),
// or -replicas N -db-dsn DSN spawns N replicas on one database and one
// data directory. Sessions are created through the first target (which
// owns them), viewers are spread over the targets round-robin and each
// session's messages go through target i mod N (forwarded to the owner);
// latency is reported per target as well.
//
//	go run ./cmd/loadgen -replicas 3 -db-dsn "host=127.0.0.1 user=postgres dbname=test" -sessions 100 -rate 50
//
// Output is a table, or JSON with -json. See docs/performance.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"time"
)

type options struct {
	target   string
	token    string
	sessions int
	viewers  int
	rate     int // chunks per second per session (spawned server)
	chunks   int // chunks per turn
	turns    int // turns per session; 0 = until duration
	duration time.Duration
	prompt   string
	json     bool
	dataDir  string
	replay   bool
	html     bool // viewers ask for server-rendered HTML
	batch    bool // viewers subscribe with batch
	raw      bool // viewers read raw frames (raw.go), not client.Follow
	serve    bool // internal: run as the spawned server
	addr     string
	replicas int    // spawned replicas (PostgreSQL)
	dbDSN    string // their database
	cpuProf  string // CPU profile of this process; spawned servers write PATH.server
	floor    bool   // measure the machine's floor instead (floor.go)
	floorSrv bool   // internal: the floor's writing side
	// killOwner: SIGKILL the replica owning the sessions after this long
	// under load (kill.go); 0: never.
	killOwner time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.target, "target", "", "drive this server (URL; several comma-separated replicas) instead of spawning one")
	flag.IntVar(&o.replicas, "replicas", 1, "spawn this many replicas on -db-dsn (PostgreSQL) and spread the clients over them")
	flag.StringVar(&o.dbDSN, "db-dsn", "", "PostgreSQL DSN of the spawned replicas (needed for -replicas > 1)")
	flag.StringVar(&o.token, "token", "", "API token for -target")
	flag.IntVar(&o.sessions, "sessions", 10, "concurrent sessions")
	flag.IntVar(&o.viewers, "viewers", 1, "viewer connections per session (each its own WebSocket)")
	flag.IntVar(&o.rate, "rate", 50, "chunks per second per session (spawned server; 0 = as fast as possible)")
	flag.IntVar(&o.chunks, "chunks", 250, "chunks per turn")
	flag.IntVar(&o.turns, "turns", 0, "turns per session (0 = keep going until -duration)")
	flag.DurationVar(&o.duration, "duration", 20*time.Second, "how long to drive load")
	flag.StringVar(&o.prompt, "prompt", "", `prompt of every turn (default "long: <chunks>")`)
	flag.BoolVar(&o.json, "json", false, "print the report as JSON")
	flag.StringVar(&o.dataDir, "data", "", "data directory of the spawned server (default: a temp dir)")
	flag.BoolVar(&o.replay, "replay", true, "measure replay and reconnect after the load")
	flag.BoolVar(&o.html, "html", false, `viewers subscribe with render "html" (the server renders fragments for them)`)
	flag.BoolVar(&o.batch, "batch", true, "viewers subscribe with batch: session/events pushes, deltas of a lagging viewer merged")
	flag.BoolVar(&o.raw, "raw", false, "viewers read the frames' bytes for the tick stamps (own WebSocket reader, no JSON decode: as light as -floor's client) instead of client.Follow; needs the spawned server's stamps")
	flag.BoolVar(&o.serve, "serve", false, "internal: run as the spawned server")
	flag.StringVar(&o.addr, "addr", "127.0.0.1:0", "internal: listen address of the spawned server")
	flag.BoolVar(&o.floor, "floor", false, "measure this machine's floor for the load's shape: plain TCP, stamped messages, no WebSocket or JSON (see floor.go)")
	flag.BoolVar(&o.floorSrv, "floor-serve", false, "internal: the floor's writing side")
	flag.StringVar(&o.cpuProf, "cpuprofile", "", "write this process's CPU profile here (a spawned server writes PATH.server)")
	flag.DurationVar(&o.killOwner, "kill-owner", 0, "with -replicas > 1: SIGKILL the replica owning the sessions after this long under load and report each session's takeover time and the refusals the survivors' clients saw")
	flag.Parse()
	if o.prompt == "" {
		o.prompt = fmt.Sprintf("long: %d", o.chunks)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	stopProfile, err := startProfile(o.cpuProf)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
	switch {
	case o.serve:
		err = serve(ctx, o)
	case o.floorSrv:
		err = floorServe(o)
	case o.floor:
		err = floor(ctx, o)
	default:
		err = run(ctx, o)
	}
	stopProfile()
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

// startProfile starts a CPU profile to path ("" is none); the returned
// func stops it.
func startProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
