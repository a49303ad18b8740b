// Command web runs the Harness server: `go run ./cmd/web`. With `user` or
// `token` as first argument it manages accounts instead, with `backup` it
// copies the live SQLite database, with `events` it prints a session's log
// (see README).
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"harness/internal/app"
	"harness/internal/config"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "harness:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	cfgArgs := args
	if len(args) > 0 && (args[0] == "user" || args[0] == "token" || args[0] == "import" || args[0] == "backup" || args[0] == "events") {
		cfgArgs = nil
	}
	cfg, err := config.Load(cfgArgs, os.Getenv)
	if err != nil {
		return err
	}
	if handled, err := RunCLI(ctx, cfg, args, os.Stdin, os.Stdout, os.Stderr); handled {
		return err
	}
	log := newLogger(cfg)

	started := time.Now()
	a, err := app.New(ctx, log, cfg, app.Options{})
	if err != nil {
		return err
	}
	// The listener first, then Start (the replica's identity, then queued
	// sessions): a start that cannot bind its port exits before it has
	// touched a session.
	ln, err := a.Listen()
	if err != nil {
		closeApp(a, cfg.ShutdownTimeout)
		return err
	}
	if err := a.Start(ctx); err != nil {
		_ = ln.Close()
		closeApp(a, cfg.ShutdownTimeout)
		return err
	}
	srv := &http.Server{Handler: a.Handler(), ReadHeaderTimeout: 10 * time.Second}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	log.Info("harness serving", "url", "http://"+ln.Addr().String(), "data", cfg.DataDir, "ready_in", time.Since(started).Round(time.Millisecond))
	// Starting allocates several MB of which under 3 MB stay live (package
	// initialisation and the app's wiring); the runtime keeps the freed
	// pages for a while. Give them back once, off the first requests' path:
	// an idle server then holds about its live heap (docs/performance.md).
	time.AfterFunc(time.Second, debug.FreeOSMemory)

	select {
	case err := <-serveErr:
		if !errors.Is(err, http.ErrServerClosed) {
			closeApp(a, cfg.ShutdownTimeout)
			return fmt.Errorf("serve: %w", err)
		}
	case <-ctx.Done():
	}
	// A second signal ends the process at once.
	stop()
	log.Info("shutting down", "drain", cfg.DrainPeriod, "budget", cfg.ShutdownTimeout)
	// The drain period, then one budget for all. During the period every
	// request is served while /readyz says "draining"; then no turn
	// starts and the running ones may finish until the budget's last
	// quarter (at most 3 s), kept for what follows: stop accepting
	// requests, close the WebSockets with 1001 (they are hijacked, so
	// Shutdown does not wait for them), stop the turns still running,
	// drain writes and hand the sessions with queued input over to the
	// other replicas (a.Close does the last four). Whatever has not
	// finished by the deadline is abandoned; the next owner's crash
	// repair covers it.
	deadline := time.Now().Add(cfg.DrainPeriod + cfg.ShutdownTimeout)
	shutdownCtx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	turnsCtx, cancelTurns := context.WithDeadline(shutdownCtx, deadline.Add(-stopReserve(cfg.ShutdownTimeout)))
	if err := a.Drain(turnsCtx, cfg.DrainPeriod); err != nil {
		log.Warn("drain: stopping what still runs", "err", err)
	}
	cancelTurns()
	err = errors.Join(srv.Shutdown(shutdownCtx), a.Close(shutdownCtx))
	log.Info("stopped", "err", err)
	return err
}

// stopReserve is the part of the shutdown budget kept, after the running
// turns had their chance, for stopping the rest and storing it: a quarter,
// at most 3 s.
func stopReserve(budget time.Duration) time.Duration {
	return min(budget/4, 3*time.Second)
}

// closeApp closes a after a failed start or serve, within the shutdown
// budget like a stop.
func closeApp(a *app.App, budget time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	_ = a.Close(ctx)
}

func newLogger(cfg config.Config) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, opts))
}
