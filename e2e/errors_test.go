package e2e_test

import (
	"strings"
	"testing"
	"time"

	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/testkit"
)

// scriptedProvider is a route to a scripted fake model server.
func scriptedProvider(t *testing.T, replies []fake.Reply, retry llm.RetryPolicy) llm.Provider {
	t.Helper()
	_, p := testkit.FakeRoute(t, fake.Script{Replies: replies}, testkit.RouteOptions{
		Name: "scripted", Label: "Scripted", Model: "scripted-model", ModelLabel: "Scripted model", Window: 64_000,
		APIKey: "sk-test-e2e-key-0123456789", Thinking: true, Retry: retry,
	})
	return p
}

func TestModelErrorShowsReadableRow(t *testing.T) {
	t.Parallel()
	retry := llm.DefaultRetryPolicy()
	retry.InitialDelay, retry.MaxDelay, retry.JitterRatio = 1500*time.Millisecond, 3*time.Second, 0
	p := scriptedProvider(t, []fake.Reply{
		{Error: &fake.HTTPError{Status: 429, Message: "Rate limit reached"}},
		{Reasoning: "Recovering.", Text: "Recovered after a retry.", Delay: 2 * time.Millisecond},
		{Error: &fake.HTTPError{Status: 401, Message: "Incorrect API key provided: sk-test-e2e-key-0123456789."}},
	}, retry)
	s := newServer(t, serverOpts{providers: []llm.Provider{p}})
	b := s.newBrowser()
	b.login(adminName, adminPass)
	b.newSession("ask")
	if label := b.text("#model-label"); !strings.Contains(label, "Scripted") {
		t.Errorf("model label %q", label)
	}

	// A transient failure: a retry row with a countdown, then the answer.
	b.send("first")
	b.visible(".item.retry")
	if r := b.text(".item.retry"); !strings.Contains(r, "RATE_LIMIT") || !strings.Contains(r, "retry 1/5") {
		t.Errorf("retry row %q", r)
	}
	b.shot("retry")
	b.waitTurns(1)
	if got := b.text(".item.assistant .md-body"); got != "Recovered after a retry." {
		t.Errorf("answer %q", got)
	}
	if r := b.text(".item.retry"); !strings.Contains(r, "retried (attempt 1)") {
		t.Errorf("settled retry row %q", r)
	}

	// A terminal failure: a readable error row with its code, no key.
	b.send("second")
	b.visible(".error-row")
	row := b.text(".error-row")
	for _, want := range []string{"The model request failed", "AUTH", "HTTP 401", "Incorrect API key"} {
		if !strings.Contains(row, want) {
			t.Errorf("error row %q lacks %q", row, want)
		}
	}
	if strings.Contains(eval[string](b, `document.body.innerHTML`), "0123456789") {
		t.Error("the page shows the API key")
	}
	b.shot("model-error")
	b.waitIdle()
}
