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

// RetryMode is how a RetryPolicy treats failures (upstream §5.5).
type RetryMode string

const (
	// RetryNormal retries the retryable codes up to MaxRetries times.
	RetryNormal RetryMode = "normal"
	// RetryAlways retries every failure, without a budget; a Retry-After
	// longer than MaxDelay falls back to the local backoff.
	RetryAlways RetryMode = "always"
)

// ModeName is the policy's mode as logged: "normal" unless always.
func (p RetryPolicy) ModeName() RetryMode {
	if p.Mode == RetryAlways {
		return RetryAlways
	}
	return RetryNormal
}

// PolicyKey names the policy in llm/retry events: Key, else the mode.
func (p RetryPolicy) PolicyKey() string {
	if p.Key != "" {
		return p.Key
	}
	return string(p.ModeName())
}

// IsZero reports whether p is the zero policy (meaning "use the default").
func (p RetryPolicy) IsZero() bool {
	return p.Mode == "" && p.Key == "" && p.MaxRetries == 0 && p.RetryableCodes == nil && p.InitialDelay == 0 && p.MaxDelay == 0 && p.JitterRatio == 0
}

// Retryable reports whether failures with code c are retried at all.
func (p RetryPolicy) Retryable(c Code) bool {
	return slices.Contains(p.RetryableCodes, c)
}

// Decide says whether to make retry number retry (1-based) after failure f,
// and how long to wait first. It gives up when the code is not retryable,
// the budget is spent, or the provider asks for a wait longer than MaxDelay.
// rnd returns a uniform value in [0,1); nil uses math/rand.
//
// In always mode every failure is retried, with no budget, and a
// Retry-After longer than MaxDelay falls back to the local backoff.
func (p RetryPolicy) Decide(retry int, f *Failure, rnd func() float64) (delay time.Duration, ok bool) {
	always := p.ModeName() == RetryAlways
	if f == nil || retry < 1 {
		return 0, false
	}
	if !always && (retry > p.MaxRetries || !p.Retryable(f.Code)) {
		return 0, false
	}
	if f.RetryAfterMs > 0 {
		ra := time.Duration(f.RetryAfterMs) * time.Millisecond
		if ra <= p.MaxDelay {
			return ra, true
		}
		if !always {
			return 0, false
		}
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
