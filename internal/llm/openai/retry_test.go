package openai_test

import (
	"testing"

	"harness/internal/llm"
	"harness/internal/llm/fake"
)

// attempt runs one model call through llm.Run and returns its finish.
func attempt(t *testing.T, p llm.Provider) (llm.FinishReason, *llm.Assembler) {
	t.Helper()
	var a llm.Assembler
	if err := llm.Run(t.Context(), p, prompt("x"), func(c llm.Chunk) error { a.Add(c); return nil }); err != nil {
		t.Fatal(err)
	}
	return a.Finish(), &a
}

// Case 61, the provider side: a RATE_LIMIT failure is retried per the
// route's policy and the retry succeeds; persistent 503s exhaust the budget
// of 5 retries and the sixth failure is terminal.
func TestRetryPolicyDrivesAttempts(t *testing.T) {
	t.Parallel()
	_, p := serve(t, []fake.Reply{
		{Error: &fake.HTTPError{Status: 429, Message: "Rate limit reached", RetryAfter: "1"}},
		{Text: "finally"},
	})
	policy := p.Info().Retry
	fin, _ := attempt(t, p)
	if fin.Kind != llm.FinishError || fin.Failure.Code != llm.CodeRateLimit {
		t.Fatalf("first attempt = %+v", fin)
	}
	delay, ok := policy.Decide(1, fin.Failure, nil)
	if !ok || delay.Milliseconds() != 1000 {
		t.Fatalf("Decide = %v, %v; want the provider's 1s", delay, ok)
	}
	fin, a := attempt(t, p)
	if fin.Kind != llm.FinishStop || a.Message("m", llm.Source{}).Text() != "finally" {
		t.Fatalf("retry = %+v", fin)
	}

	var replies []fake.Reply
	for range 6 {
		replies = append(replies, fake.Reply{Error: &fake.HTTPError{Status: 503, Message: "busy"}})
	}
	_, p = serve(t, replies)
	retries := 0
	for {
		fin, _ := attempt(t, p)
		if fin.Kind != llm.FinishError || fin.Failure.Code != llm.CodeServer {
			t.Fatalf("attempt %d = %+v", retries+1, fin)
		}
		if _, ok := policy.Decide(retries+1, fin.Failure, nil); !ok {
			break
		}
		retries++
	}
	if retries != 5 {
		t.Fatalf("retried %d times, want 5", retries)
	}
}
