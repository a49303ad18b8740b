package llm

import (
	"testing"
	"time"
)

func TestDefaultRetryPolicy(t *testing.T) {
	t.Parallel()
	p := DefaultRetryPolicy()
	if p.MaxRetries != 5 || p.InitialDelay != 500*time.Millisecond || p.MaxDelay != 10*time.Second || p.JitterRatio != 0.1 {
		t.Fatalf("policy = %+v", p)
	}
	retryable := map[Code]bool{
		CodeEmptyResponse: true, CodeRateLimit: true, CodeServer: true, CodeTimeout: true, CodeTransport: true,
		CodeStreamClosed: false, CodeMalformedResponse: false, CodeAuth: false, CodeQuota: false,
		CodeInvalidRequest: false, CodeContextWindowExceeded: false, CodeAborted: false, CodeContentFilter: false,
		CodeUnknown: false,
	}
	for code, want := range retryable {
		if got := p.Retryable(code); got != want {
			t.Errorf("Retryable(%s) = %v, want %v", code, got, want)
		}
	}
	if p.IsZero() || !(RetryPolicy{}).IsZero() {
		t.Fatal("IsZero wrong")
	}
}

func TestDecide(t *testing.T) {
	t.Parallel()
	p := DefaultRetryPolicy()
	mid := func() float64 { return 0.5 }
	low := func() float64 { return 0 }
	high := func() float64 { return 0.999999 }
	tests := []struct {
		name  string
		retry int
		f     *Failure
		rnd   func() float64
		want  time.Duration
		ok    bool
	}{
		{"first retry no jitter", 1, &Failure{Code: CodeRateLimit}, mid, 500 * time.Millisecond, true},
		{"second retry doubles", 2, &Failure{Code: CodeServer}, mid, time.Second, true},
		{"fifth retry is 8s", 5, &Failure{Code: CodeTimeout}, mid, 8 * time.Second, true},
		{"low jitter", 1, &Failure{Code: CodeTransport}, low, 450 * time.Millisecond, true},
		{"high jitter", 1, &Failure{Code: CodeTransport}, high, 549999900, true},
		{"budget exhausted", 6, &Failure{Code: CodeRateLimit}, mid, 0, false},
		{"not retryable", 1, &Failure{Code: CodeAuth}, mid, 0, false},
		{"context overflow is compaction's job", 1, &Failure{Code: CodeContextWindowExceeded}, mid, 0, false},
		{"nil failure", 1, nil, mid, 0, false},
		{"retry-after used verbatim", 1, &Failure{Code: CodeRateLimit, RetryAfterMs: 2000}, high, 2 * time.Second, true},
		{"retry-after at max", 3, &Failure{Code: CodeRateLimit, RetryAfterMs: 10000}, mid, 10 * time.Second, true},
		{"retry-after above max gives up", 1, &Failure{Code: CodeRateLimit, RetryAfterMs: 10001}, mid, 0, false},
		{"empty response retried", 1, &Failure{Code: CodeEmptyResponse}, mid, 500 * time.Millisecond, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := p.Decide(tt.retry, tt.f, tt.rnd)
			if ok != tt.ok || got != tt.want {
				t.Fatalf("Decide = %v, %v; want %v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestDecideCapsAtMax(t *testing.T) {
	t.Parallel()
	p := DefaultRetryPolicy()
	p.MaxRetries = 60 // far beyond the doubling range: must neither overflow nor exceed max
	for retry := 1; retry <= p.MaxRetries; retry++ {
		d, ok := p.Decide(retry, &Failure{Code: CodeServer}, func() float64 { return 0.999999 })
		if !ok || d <= 0 || d > p.MaxDelay {
			t.Fatalf("retry %d: delay %v ok %v", retry, d, ok)
		}
	}
	// Without a random source it still stays in the jitter band.
	d, ok := p.Decide(1, &Failure{Code: CodeServer}, nil)
	if !ok || d < 450*time.Millisecond || d > 550*time.Millisecond {
		t.Fatalf("default rnd delay %v", d)
	}
}

// Always mode retries every failure with no budget; a Retry-After above the
// cap falls back to the local backoff. The policy key defaults to the mode.
func TestDecideAlways(t *testing.T) {
	t.Parallel()
	p := DefaultRetryPolicy()
	p.Mode = RetryAlways
	mid := func() float64 { return 0.5 }
	if d, ok := p.Decide(100, &Failure{Code: CodeAuth}, mid); !ok || d != p.MaxDelay {
		t.Fatalf("retry 100 of AUTH: %v %v", d, ok)
	}
	if d, ok := p.Decide(1, &Failure{Code: CodeRateLimit, RetryAfterMs: 60_000}, mid); !ok || d != p.InitialDelay {
		t.Fatalf("long Retry-After: %v %v", d, ok)
	}
	if _, ok := p.Decide(1, nil, mid); ok {
		t.Fatal("nil failure retried")
	}
	if p.PolicyKey() != "always" || DefaultRetryPolicy().PolicyKey() != "normal" || DefaultRetryPolicy().ModeName() != RetryNormal {
		t.Fatalf("keys %q %q", p.PolicyKey(), DefaultRetryPolicy().PolicyKey())
	}
	p.Key = "fast"
	if p.PolicyKey() != "fast" || p.IsZero() {
		t.Fatal("explicit key")
	}
}
