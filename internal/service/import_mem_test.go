package service_test

import (
	"archive/zip"
	"bytes"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"harness/internal/importer"
	"harness/internal/testkit"
)

// bombLog writes a DeepSeek Harness log of one turn: a prompt, then text
// delta rows of perRow one-letter deltas, rows of them, then the turn's
// end. Packed rows are what expands: each delta becomes an event.
func bombLog(rows, perRow int, prompt string) []byte {
	var b bytes.Buffer
	seq := 0
	line := func(format string, args ...any) {
		fmt.Fprintf(&b, format, args...)
		b.WriteByte('\n')
	}
	line(`{"type":"session","version":0,"createdAt":1783352127000}`)
	line(`{"type":"turn/start","seq":%d,"time":1,"data":{"turn":1}}`, seq)
	seq++
	line(`{"type":"step/start","seq":%d,"time":1,"data":{"turn":1,"step":1}}`, seq)
	seq++
	line(`{"type":"user/message","seq":%d,"time":1,"data":{"content":[{"type":"text","text":%q}],"source":{"kind":"user"},"role":"user","id":"u1"},"surfaceOp":"append"}`, seq, prompt)
	seq++
	line(`{"type":"assistant/chunk","seq":%d,"time":1,"data":{"turn":1,"step":1,"chunk":{"type":"block-start","index":0,"blockType":"text"}}}`, seq)
	seq++
	texts := strings.TrimSuffix(strings.Repeat(`"a",`, perRow), ",")
	dt := strings.TrimSuffix(strings.Repeat(`0,`, perRow-1), ",")
	for range rows {
		line(`{"type":"text-chunks","seq0":%d,"time0":1,"data":{"turn":1,"step":1,"index":0,"dt":[%s],"texts":[%s]}}`, seq, dt, texts)
		seq += perRow
	}
	line(`{"type":"assistant/chunk","seq":%d,"time":1,"data":{"turn":1,"step":1,"chunk":{"type":"block-end","index":0,"block":{"type":"text","text":"a"}}}}`, seq)
	seq++
	line(`{"type":"assistant/message","seq":%d,"time":1,"data":{"turn":1,"step":1,"message":{"role":"assistant","content":[{"type":"text","text":"a"}],"source":{"kind":"model","provider":"p","model":"m"},"id":"a1"}},"surfaceOp":"append"}`, seq)
	seq++
	line(`{"type":"step/end","seq":%d,"time":1,"data":{"turn":1,"step":1}}`, seq)
	seq++
	line(`{"type":"turn/end","seq":%d,"time":1,"data":{"turn":1,"reason":{"kind":"completed"}}}`, seq)
	return b.Bytes()
}

func zstdOf(tb testing.TB, b []byte) []byte {
	tb.Helper()
	var out bytes.Buffer
	enc, err := zstd.NewWriter(&out, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := enc.Write(b); err != nil {
		tb.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		tb.Fatal(err)
	}
	return out.Bytes()
}

func zipOf(tb testing.TB, name string, b []byte) []byte {
	tb.Helper()
	var out bytes.Buffer
	zw := zip.NewWriter(&out)
	w, err := zw.Create(name)
	if err == nil {
		_, err = w.Write(b)
	}
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		tb.Fatal(err)
	}
	return out.Bytes()
}

// heapSampler records the peak of the live heap while it runs.
type heapSampler struct {
	peak atomic.Uint64
	stop chan struct{}
	done chan struct{}
}

func heapBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func startHeapSampler() *heapSampler {
	h := &heapSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(h.done)
		t := time.NewTicker(200 * time.Microsecond)
		defer t.Stop()
		for {
			if v := heapBytes(); v > h.peak.Load() {
				h.peak.Store(v)
			}
			select {
			case <-h.stop:
				return
			case <-t.C:
			}
		}
	}()
	return h
}

func (h *heapSampler) Stop() uint64 {
	close(h.stop)
	<-h.done
	return h.peak.Load()
}

func idleHeap() uint64 {
	runtime.GC()
	runtime.GC()
	return heapBytes()
}

// BenchmarkImportMemory imports bombs (tiny compressed logs that expand
// to many events, or to the byte cap) and the largest corpus file, and
// reports the live heap's peak above the idle heap during the import
// (peak-MB, sampled every 200 µs) and what stays after it (kept-MB), both
// in MiB:
//
//	go test ./internal/service/ -run X -bench ImportMemory -benchtime 1x
func BenchmarkImportMemory(b *testing.B) {
	cases := []struct {
		name    string
		in      []byte
		refused bool // over a cap
	}{
		// 100 rows of 1,000 deltas: 100,000 events from under 1 KB (a
		// tenth of the event cap: the whole cap takes minutes here, and
		// the cost per event is the same).
		{"bomb-events", zstdOf(b, bombLog(100, 1000, "go")), false},
		// A prompt that fills the byte cap.
		{"bomb-bytes", zstdOf(b, bombLog(1, 2, strings.Repeat("x", importer.MaxBytes-4096))), false},
		// The same, over the byte cap: refused.
		{"bomb-over-cap", zstdOf(b, bombLog(1, 2, strings.Repeat("x", importer.MaxBytes))), true},
		// The event bomb in a DeepSeek Harness export ZIP.
		{"bomb-zip", zipOf(b, "session.jsonl", bombLog(100, 1000, "go")), false},
		{"corpus-largest", readCorpusFile(b, "examples--headless-agent--advanced-toolchain--session.jsonl"), false},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			st := testkit.NewStack(b, testkit.StackOptions{})
			alice := st.Actor("alice", false)
			var peak, kept float64
			for range b.N {
				idle := idleHeap()
				h := startHeapSampler()
				_, err := st.Service.Import(b.Context(), alice, bytes.NewReader(c.in))
				p := h.Stop()
				if (err != nil) != c.refused {
					b.Fatalf("%s: %v", c.name, err)
				}
				after := idleHeap()
				peak = max(peak, float64(int64(p)-int64(idle))/(1<<20))
				kept = max(kept, float64(int64(after)-int64(idle))/(1<<20))
			}
			b.ReportMetric(peak, "peak-MB")
			b.ReportMetric(kept, "kept-MB")
			b.ReportMetric(float64(len(c.in))/(1<<10), "input-KB")
		})
	}
}
