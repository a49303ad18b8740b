// Command fakellm serves the scripted OpenAI-compatible model server of
// internal/llm/fake: the offline demo model, or a JSON script.
//
//	go run ./cmd/fakellm -addr 127.0.0.1:8089 [-script FILE] [-time-scale 1]
//
// See the internal/llm/fake package documentation for the script format,
// the demo rules and a curl example.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"harness/internal/llm/fake"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr, nil); err != nil {
		fmt.Fprintln(os.Stderr, "fakellm:", err)
		os.Exit(1)
	}
}

// run serves until ctx is done; ready, when set, receives the base URL.
func run(ctx context.Context, args []string, logOut io.Writer, ready func(url string)) error {
	fs := flag.NewFlagSet("fakellm", flag.ContinueOnError)
	fs.SetOutput(logOut)
	addr := fs.String("addr", "127.0.0.1:8089", "listen address")
	script := fs.String("script", "", "JSON script file (default: the offline demo model)")
	scale := fs.Float64("time-scale", 1, "multiplier for every pacing delay (0: no pauses)")
	delay := fs.Duration("chunk-delay", 4*time.Millisecond, "demo model pause between deltas")
	verbose := fs.Bool("v", false, "log every reply")
	if err := fs.Parse(args); err != nil {
		return err
	}

	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: level}))
	opts := []fake.Option{fake.WithLogger(log), fake.WithTimeScale(*scale), fake.WithChunkDelay(*delay)}

	var srv *fake.Server
	if *script == "" {
		srv = fake.NewDemo(opts...)
	} else {
		s, err := fake.LoadScript(*script)
		if err != nil {
			return err
		}
		srv = fake.NewServer(s, opts...)
	}
	url, err := srv.Listen(*addr)
	if err != nil {
		return err
	}
	log.Info("fake model listening", "url", url, "chat", url+"/v1/chat/completions", "script", *script)
	if ready != nil {
		ready(url)
	}
	<-ctx.Done()
	log.Info("shutting down")
	return srv.Close()
}
