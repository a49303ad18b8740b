package openai_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/llm/openai"
	"harness/internal/testkit/poll"
)

// Cancelling mid-stream ends the call with ABORTED and leaves no goroutine
// behind. Not parallel: it counts goroutines.
func TestCancelMidStream(t *testing.T) {
	base := runtime.NumGoroutine()

	srv := fake.NewServer(fake.Script{Replies: []fake.Reply{{
		Text: "visible prefix then silence", Fault: &fake.Fault{Kind: fake.FaultStall, After: 2, For: 10 * time.Second},
	}}}, fake.WithTimeScale(0))
	hs := httptest.NewServer(srv)
	tr := &http.Transport{}
	p := deepseek(t, hs.URL, func(c *openai.Config) { c.HTTPClient = &http.Client{Transport: tr} })

	ctx, cancel := context.WithCancel(context.Background())
	var chunks []llm.Chunk
	err := p.Stream(ctx, prompt("x"), func(c llm.Chunk) error {
		chunks = append(chunks, c)
		if c.Type == llm.ChunkTextDelta && len(chunks) == 3 {
			cancel() // the server now stalls; cancel must end the read
		}
		return nil
	})
	cancel()
	f := llm.AsFailure(err)
	if f == nil || f.Code != llm.CodeAborted {
		t.Fatalf("Stream = %v, want ABORTED", err)
	}
	var a llm.Assembler
	for _, c := range chunks {
		a.Add(c)
	}
	if !a.HasVisible() || a.Interrupted()[0].Text != "visible prefix" {
		t.Fatalf("interrupted = %+v", a.Interrupted())
	}

	tr.CloseIdleConnections()
	srv.Close()
	hs.Close()
	// The check below reports what is left when they do not end in time.
	poll.Wait(t, func() bool { return runtime.NumGoroutine() <= base }, poll.Within(5*time.Second), poll.Every(10*time.Millisecond))
	if n := runtime.NumGoroutine(); n > base {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		if strings.Contains(stacks, "llm/openai.") || strings.Contains(stacks, "persistConn") {
			t.Fatalf("goroutines leaked: %d > %d\n%s", n, base, stacks)
		}
	}
}

// An error from emit stops the stream and is returned as is.
func TestEmitErrorReturnedAsIs(t *testing.T) {
	t.Parallel()
	_, p := serve(t, []fake.Reply{{Text: "a b c d"}})
	stop := context.Canceled
	n := 0
	err := p.Stream(context.Background(), prompt("x"), func(c llm.Chunk) error {
		n++
		if n == 2 {
			return stop
		}
		return nil
	})
	if err != stop || n != 2 {
		t.Fatalf("Stream = %v after %d chunks", err, n)
	}
}
