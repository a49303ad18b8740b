package ws_test

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"harness/client"
	"harness/internal/app"
	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/testkit/apptest"
	"harness/internal/ws"
)

// BenchmarkFanout streams 50 chunks/s per session for 5 s and measures the
// latency from the provider emitting a chunk to a subscriber's client
// decoding its frame: 100 sessions with one subscriber each, and one
// session with 500 subscribers (every subscriber on its own socket).
// Metrics: p50/p99/max latency in ms, chunks delivered, subscribers cut,
// and the peak heap of the process (server and clients together).
//
//	go test -run '^$' -bench Fanout -benchtime 1x ./internal/ws
func BenchmarkFanout(b *testing.B) {
	b.Run("sessions=100/subscribers=1", func(b *testing.B) { fanout(b, 100, 1) })
	b.Run("sessions=1/subscribers=500", func(b *testing.B) { fanout(b, 1, 500) })
}

func fanout(b *testing.B, sessions, subsPer int) {
	const (
		rate     = 50
		duration = 5 * time.Second
	)
	chunks := int(duration / time.Second * rate)
	ctx := context.Background()
	a := apptest.StartApp(b, nil, app.Options{
		Providers: []llm.Provider{fake.Tick{Name: "tick", Every: time.Second / rate, Chunks: chunks}},
		// One user holds every subscriber's socket.
		WS: ws.Options{MaxSockets: sessions * subsPer},
	})
	c := a.User(b, "bench", false).Client

	ids := make([]string, sessions)
	for i := range ids {
		s, err := c.CreateSession(ctx, client.NewSession{})
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = s.ID
	}
	type result struct {
		lat    []time.Duration
		cut    bool
		chunks int
	}
	results := make([]result, sessions*subsPer)
	var ready, done sync.WaitGroup
	for i := range results {
		id := ids[i%sessions]
		cn, err := c.Dial(ctx)
		if err != nil {
			b.Fatal(err)
		}
		defer cn.Close()
		sub, err := cn.Subscribe(ctx, id, -1)
		if err != nil {
			b.Fatal(err)
		}
		ready.Add(1)
		done.Add(1)
		go func(r *result) {
			defer done.Done()
			r.lat = make([]time.Duration, 0, chunks)
			readyOnce := sync.OnceFunc(ready.Done)
			defer readyOnce()
			for p := range sub.C {
				if p.Ch == client.ChReplayDone {
					readyOnce()
				}
				if p.Ch != client.ChEvent {
					continue
				}
				switch p.Event.Type {
				case "assistant/chunk":
					// The stamp is read straight from the bytes: a JSON
					// decode here would add to the latency measured.
					at, ok := fake.ParseTick(p.Event.Data)
					if ok {
						r.lat = append(r.lat, time.Since(at))
						r.chunks++
					}
				case "turn/end":
					return
				}
			}
			r.cut = client.IsSlowConsumer(cn.Err())
		}(&results[i])
	}
	ready.Wait()

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	baseHeap := ms.HeapInuse
	var peak atomic.Uint64
	stopSampling := make(chan struct{})
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-t.C:
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				if m.HeapInuse > peak.Load() {
					peak.Store(m.HeapInuse)
				}
			}
		}
	}()

	b.ResetTimer()
	for _, id := range ids {
		if _, err := c.SendMessage(ctx, id, "go", "followup"); err != nil {
			b.Fatal(err)
		}
	}
	done.Wait()
	b.StopTimer()
	close(stopSampling)

	var all []time.Duration
	cut, delivered := 0, 0
	for _, r := range results {
		all = append(all, r.lat...)
		delivered += r.chunks
		if r.cut {
			cut++
		}
	}
	slices.Sort(all)
	pct := func(p float64) float64 {
		if len(all) == 0 {
			return 0
		}
		return float64(all[min(len(all)-1, int(float64(len(all))*p))]) / float64(time.Millisecond)
	}
	want := len(results) * chunks
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(pct(1), "max-ms")
	b.ReportMetric(float64(delivered), "chunks")
	b.ReportMetric(float64(cut), "cut")
	b.ReportMetric(float64(peak.Load()-min(baseHeap, peak.Load()))/(1<<20), "peak-heap-growth-MiB")
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
	if delivered != want || cut > 0 {
		b.Errorf("delivered %d of %d chunks, %d subscribers cut", delivered, want, cut)
	}
	b.Logf("%d sessions x %d subscribers: %d chunks, p50 %.2f ms, p99 %.2f ms, max %.2f ms, cut %d, heap %.1f MiB (base %.1f)",
		sessions, subsPer, delivered, pct(.5), pct(.99), pct(1), cut, float64(peak.Load())/(1<<20), float64(baseHeap)/(1<<20))
}
