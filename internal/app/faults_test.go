package app_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"harness/client"
	"harness/internal/app"
	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/llm/openai"
	"harness/internal/testkit"
	"harness/internal/testkit/apptest"
	"harness/internal/testkit/poll"
)

// faultModel answers "fault: <kind>" prompts with that fault on the first
// attempts of each session, then a normal reply; anything else is normal.
type faultModel struct {
	mu       sync.Mutex
	attempts map[string]int // session id -> requests so far
}

func (f *faultModel) reply(r fake.Recorded) fake.Reply {
	msgs := r.Messages()
	var prompt string
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" && !strings.HasPrefix(msgs[i].Text(), "Current runtime context") {
			prompt = msgs[i].Text()
			break
		}
	}
	f.mu.Lock()
	sid := r.Header.Get(openai.HeaderSessionID)
	f.attempts[sid]++
	n := f.attempts[sid]
	f.mu.Unlock()
	ok := fake.Reply{Reasoning: "fine", Text: "recovered answer"}
	kind, found := strings.CutPrefix(prompt, "fault: ")
	if !found {
		return ok
	}
	switch kind {
	case "429 storm": // three rate limits with Retry-After, then success
		if n <= 3 {
			return fake.Reply{Error: &fake.HTTPError{Status: 429, Message: "rate limited", RetryAfter: "1"}}
		}
	case "503": // two server errors, then success
		if n <= 2 {
			return fake.Reply{Error: &fake.HTTPError{Status: 503, Message: "overloaded"}}
		}
	case "stall": // the first stream stalls past the idle watchdog
		if n == 1 {
			return fake.Reply{Text: "never finished", Fault: &fake.Fault{Kind: fake.FaultStall, After: 1}}
		}
	case "cut":
		return fake.Reply{Text: "half an answ", Fault: &fake.Fault{Kind: fake.FaultCut, After: 2}}
	case "malformed":
		return fake.Reply{Text: "x", Fault: &fake.Fault{Kind: fake.FaultMalformed, After: 1}}
	case "401":
		return fake.Reply{Error: &fake.HTTPError{Status: 401, Message: "invalid api key sk-live-SECRET"}}
	}
	return ok
}

// Model faults end in the right outcome, visible in the log the user sees,
// while 50 sessions hit them at once; the server stays healthy.
func TestModelFaultsUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("fault storm: skipped with -short")
	}
	t.Parallel()
	model := &faultModel{attempts: map[string]int{}}
	retry := llm.DefaultRetryPolicy()
	retry.InitialDelay, retry.MaxDelay = 10*time.Millisecond, 2*time.Second
	_, prov := testkit.FakeRoute(t, fake.Script{Responder: model.reply}, testkit.RouteOptions{
		Name: "faulty", Label: "Faulty", Model: "m", ModelLabel: "m", Kind: openai.KindOpenAI, APIKey: "sk-live-SECRET",
		IdleTimeout: 2 * time.Second, Retry: retry, // generous: a loaded CI machine must not trip it by accident
	})
	ctx := context.Background()
	a := apptest.StartApp(t, nil, app.Options{Providers: []llm.Provider{prov}})
	c := a.User(t, "ops", false).Client

	cases := []struct {
		kind string
		want outcome
	}{
		{"429 storm", outcome{"completed", "", 3}},
		{"503", outcome{"completed", "", 2}},
		{"stall", outcome{"completed", "", 1}},
		{"cut", outcome{"error", "STREAM_CLOSED", 0}},
		{"malformed", outcome{"error", "MALFORMED_RESPONSE", 0}},
		{"401", outcome{"error", "AUTH", 0}},
		{"none", outcome{"completed", "", 0}},
	}
	const sessions = 50
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for i := range sessions {
		tc := cases[i%len(cases)]
		wg.Go(func() {
			s, err := c.CreateSession(ctx, client.NewSession{})
			if err != nil {
				errs <- err
				return
			}
			if _, err := c.SendMessage(ctx, s.ID, "fault: "+tc.kind, "followup"); err != nil {
				errs <- err
				return
			}
			got, err := waitOutcome(t, ctx, c, s.ID)
			if err != nil {
				errs <- fmt.Errorf("%s: %w", tc.kind, err)
				return
			}
			if got.end != tc.want.end || got.code != tc.want.code || got.retries != tc.want.retries {
				errs <- fmt.Errorf("%s: got %+v, want %+v", tc.kind, got, tc.want)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	// Healthy afterwards: ready, and a plain prompt works.
	res, err := http.Get(a.URL + "/readyz")
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("readyz after the storm: %v %v", res, err)
	}
	res.Body.Close()
	s, _ := c.CreateSession(ctx, client.NewSession{})
	if _, err := c.SendMessage(ctx, s.ID, "hello", "followup"); err != nil {
		t.Fatal(err)
	}
	if got, err := waitOutcome(t, ctx, c, s.ID); err != nil || got.end != "completed" {
		t.Fatalf("plain prompt after the storm: %+v %v", got, err)
	}
}

// outcome is how a session's first turn ended.
type outcome struct {
	end     string // turn end reason kind
	code    string // failure code when the turn ended in error
	retries int    // llm/retry events
}

// waitOutcome waits for the first turn/end and reads its reason, failure
// code and the number of llm/retry events; the key never shows.
// It returns errors rather than failing t: it runs on its own goroutine.
func waitOutcome(t testing.TB, ctx context.Context, c *client.Client, id string) (outcome, error) {
	var out outcome
	var failed error
	ended := poll.Wait(t, func() bool {
		page, err := c.Events(ctx, id, -1, 0)
		if err != nil {
			failed = err
			return true
		}
		out = outcome{}
		for _, e := range page.Events {
			data := string(e.Data)
			if strings.Contains(data, "SECRET") {
				failed = fmt.Errorf("the API key reached the log: %s", data)
				return true
			}
			switch e.Type {
			case "llm/retry":
				out.retries++
			case "turn/end":
				out.end = between(data, `"kind":"`, `"`)
				out.code = between(data, `"code":"`, `"`)
				return true
			}
		}
		return false
	}, poll.Within(30*time.Second), poll.Every(20*time.Millisecond))
	switch {
	case failed != nil:
		return out, failed
	case !ended:
		return out, fmt.Errorf("session %s: no turn end", id)
	}
	return out, nil
}

func between(s, start, end string) string {
	i := strings.Index(s, start)
	if i < 0 {
		return ""
	}
	s = s[i+len(start):]
	if j := strings.Index(s, end); j >= 0 {
		return s[:j]
	}
	return s
}
