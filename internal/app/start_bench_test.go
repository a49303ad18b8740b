package app_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"harness/internal/app"
	"harness/internal/config"
	"harness/internal/sandbox"
)

// BenchmarkStart is what a server start costs this process from app.New to
// a ready store (app.New, then Start, then one /readyz-equivalent ping), on
// an existing data directory with an admin, as cmd/web does at every start
// after the first. Close is not measured. Package initialisation is not in
// it (it runs once per process: see GODEBUG=inittrace=1 and
// scripts/startmem.sh, docs/performance.md). The sandbox probe, which runs
// in the background in other processes, is left out: the sandbox is
// "unavailable".
//
//	go test -run '^$' -bench Start -benchtime 50x ./internal/app
func BenchmarkStart(b *testing.B) {
	dir := b.TempDir()
	cfg := config.Config{
		Addr: "127.0.0.1:0", DataDir: dir, DBDriver: "sqlite", DBDSN: filepath.Join(dir, "harness.db"),
		ShutdownTimeout: 5 * time.Second, IdleUnload: time.Minute,
	}
	log := slog.New(slog.DiscardHandler)
	opts := app.Options{Getenv: func(string) string { return "" }, Sandbox: sandbox.Unavailable("benchmark")}
	ctx := context.Background()
	start := func(cfg config.Config) *app.App {
		a, err := app.New(ctx, log, cfg, opts)
		if err != nil {
			b.Fatal(err)
		}
		if err := a.Start(ctx); err != nil {
			b.Fatal(err)
		}
		if err := a.DB.Ping(ctx); err != nil {
			b.Fatal(err)
		}
		return a
	}
	// The first start creates the database and the admin.
	first := cfg
	first.AdminPassword = "benchmark-password"
	if err := start(first).Close(ctx); err != nil {
		b.Fatal(err)
	}
	cpu := time.Duration(0)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		c0 := cpuTime()
		a := start(cfg)
		cpu += cpuTime() - c0
		b.StopTimer()
		if err := a.Close(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/start")
}
