package openai

import (
	"io"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// The watchdog at its real default: a read that sees no byte for
// DefaultIdleTimeout fires it, a read that gets bytes in time re-arms it,
// keep-alive comments count as activity, and a consumer that is slow
// between reads never trips it. Time is simulated, so five-minute stalls
// take no wall time.
func TestWatchdogAtDefaultIdleTimeout(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// feed writes to the stream (the model's side) in simulated time.
		feed  func(w *io.PipeWriter)
		fired bool
	}{
		{"silent past the timeout", func(w *io.PipeWriter) {
			time.Sleep(DefaultIdleTimeout + time.Second)
		}, true},
		{"bytes just before the timeout, twice", func(w *io.PipeWriter) {
			for range 2 {
				time.Sleep(DefaultIdleTimeout - time.Second)
				_, _ = io.WriteString(w, "data: {}\n\n")
			}
			_ = w.Close()
		}, false},
		{"keep-alive comments only", func(w *io.PipeWriter) {
			for range 10 {
				time.Sleep(DefaultIdleTimeout / 2)
				_, _ = io.WriteString(w, ": keep-alive\n\n")
			}
			_ = w.Close()
		}, false},
		{"comments, then silence", func(w *io.PipeWriter) {
			time.Sleep(DefaultIdleTimeout / 2)
			_, _ = io.WriteString(w, ": keep-alive\n\n")
			time.Sleep(DefaultIdleTimeout + time.Second)
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				var fired atomic.Bool
				pr, pw := io.Pipe()
				dog := newWatchdog(DefaultIdleTimeout, func() {
					fired.Store(true)
					_ = pr.CloseWithError(errIdle) // what cancelling the request does to the body
				})
				fed := make(chan struct{})
				go func() {
					defer close(fed)
					tt.feed(pw)
				}()
				body := newSSEBody(pr, dog)
				_, _ = io.ReadAll(body)
				<-fed
				if fired.Load() != tt.fired {
					t.Fatalf("watchdog fired = %v, want %v", fired.Load(), tt.fired)
				}
			})
		})
	}
}

// A consumer that takes longer than the timeout between reads is not a
// stalled model: the watchdog is armed only while a read is outstanding.
func TestWatchdogIgnoresASlowConsumer(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var fired atomic.Bool
		pr, pw := io.Pipe()
		dog := newWatchdog(DefaultIdleTimeout, func() { fired.Store(true) })
		go func() {
			for range 3 {
				_, _ = io.WriteString(pw, "data: {}\n\n")
			}
			_ = pw.Close()
		}()
		body := newSSEBody(pr, dog)
		buf := make([]byte, 4)
		for {
			_, err := body.Read(buf)
			if err != nil {
				break
			}
			time.Sleep(2 * DefaultIdleTimeout) // the consumer is busy
		}
		synctest.Wait()
		if fired.Load() {
			t.Fatal("the watchdog fired while the consumer, not the model, was slow")
		}
	})
}
