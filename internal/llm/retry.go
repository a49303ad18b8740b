package llm

import (
	"math/rand/v2"
	"slices"
	"time"
)

// DefaultRetryPolicy is the "normal" policy of upstream §5.5: five retries of
// transient failures with jittered exponential backoff. STREAM_CLOSED,
// MALFORMED_RESPONSE, AUTH, QUOTA, INVALID_REQUEST, CONTEXT_WINDOW_EXCEEDED
// (compaction's job) and ABORTED are not retried.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{
		MaxRetries:     5,
		RetryableCodes: []Code{CodeEmptyResponse, CodeRateLimit, CodeServer, CodeTimeout, CodeTransport},
		InitialDelay:   500 * time.Millisecond,
		MaxDelay:       10 * time.Second,
		JitterRatio:    0.1,
	}
}

// IsZero reports whether p is the zero policy (meaning "use the default").
func (p RetryPolicy) IsZero() bool {
	return p.MaxRetries == 0 && p.RetryableCodes == nil && p.InitialDelay == 0 && p.MaxDelay == 0 && p.JitterRatio == 0
}

// Retryable reports whether failures with code c are retried at all.
func (p RetryPolicy) Retryable(c Code) bool {
	return slices.Contains(p.RetryableCodes, c)
}

// Decide says whether to make retry number retry (1-based) after failure f,
// and how long to wait first. It gives up when the code is not retryable,
// the budget is spent, or the provider asks for a wait longer than MaxDelay.
// rnd returns a uniform value in [0,1); nil uses math/rand.
func (p RetryPolicy) Decide(retry int, f *Failure, rnd func() float64) (delay time.Duration, ok bool) {
	if f == nil || retry < 1 || retry > p.MaxRetries || !p.Retryable(f.Code) {
		return 0, false
	}
	if f.RetryAfterMs > 0 {
		ra := time.Duration(f.RetryAfterMs) * time.Millisecond
		if ra > p.MaxDelay {
			return 0, false
		}
		return ra, true
	}
	base := p.InitialDelay
	for i := 1; i < retry && base < p.MaxDelay; i++ {
		base *= 2
	}
	base = min(base, p.MaxDelay)
	if rnd == nil {
		rnd = rand.Float64
	}
	factor := 1 - p.JitterRatio + 2*p.JitterRatio*rnd()
	delay = time.Duration(float64(base) * factor)
	return max(0, min(delay, p.MaxDelay)), true
}
