package compact

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"harness/internal/driver"
	"harness/internal/llm"
	"harness/internal/session"
)

// memStore serves hand-built logs to a driver.Manager, so a test gets a
// real *driver.Agent over a log shape the driver itself never produces.
type memStore struct{ logs map[string]*session.Log }

func (s memStore) SessionMeta(_ context.Context, id string) (driver.Meta, error) {
	return driver.Meta{ID: id, Provider: "p", Model: "m", Header: s.logs[id].Header()}, nil
}
func (s memStore) LoadLog(_ context.Context, id string, _ func() int64) (*session.Log, error) {
	return s.logs[id], nil
}
func (memStore) Enqueue(string, session.Event)                          {}
func (memStore) Flush(context.Context, string) error                    { return nil }
func (memStore) SetPendingInbox(context.Context, string, int) error     { return nil }
func (memStore) PendingInboxSessions(context.Context) ([]string, error) { return nil, nil }

// pairLog is an open turn whose whole history is one tool pair.
func pairLog(t *testing.T, result string) *session.Log {
	t.Helper()
	l := session.New(session.Header{ID: "pair"}, session.Options{})
	must := func(_ session.Event, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(l.Append(session.TypeTurnStart, session.TurnStart{Turn: 1}))
	must(l.Append(session.TypeStepStart, session.StepBoundary{Turn: 1, Step: 1}))
	must(l.Append(session.TypeRequestHeader, session.RequestHeader{Reason: session.HeaderInitial,
		Header: session.EpochHeader{Config: llm.CallConfig{Provider: "p", Model: "m"}, System: "system"}}))
	call := llm.Message{ID: "a1", Role: llm.RoleAssistant, Content: []llm.ContentBlock{llm.ToolCall("c1", "emit", "{}")},
		Source: llm.Source{Kind: llm.SourceModel, Provider: "p", Model: "m"}}
	must(l.AppendSurface(session.TypeAssistantMessage, session.AssistantMessage{Turn: 1, Step: 1, Message: call}, session.Append(), nil))
	must(l.Append(session.TypeToolCall, session.ToolCall{Turn: 1, Step: 1, CallID: "c1", Name: "emit", Arguments: "{}"}))
	res := llm.ToolResultMessage("r1", "c1", []llm.ContentBlock{llm.Text(result)}, false)
	must(l.AppendSurface(session.TypeToolResult, session.ToolResult{Turn: 1, Step: 1, Message: res}, session.Append(), nil))
	must(l.Append(session.TypeStepEnd, session.StepBoundary{Turn: 1, Step: 1}))
	must(l.Append(session.TypeStepStart, session.StepBoundary{Turn: 1, Step: 2}))
	return l
}

// An overflow whose history is a single tool pair: nothing to summarize.
// With a small result the hook logs nothing and defers to next (the
// original error stays); with an oversized one pruning alone is progress,
// so it retries.
func TestOverflowSingleToolPair(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		result    string
		wantRetry bool
		wantTypes []session.Type
	}{
		{"indivisible", strings.Repeat("r", 4000), false, nil},
		{"prune is progress", strings.Repeat("r", 20000), true, []session.Type{session.TypeCompactionPrune, session.TypeToolResult}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := pairLog(t, tt.result)
			logger := slog.New(slog.DiscardHandler)
			m := driver.NewManager(logger, memStore{logs: map[string]*session.Log{"pair": l}}, driver.Options{})
			t.Cleanup(func() { _ = m.Shutdown(context.Background()) })
			a, err := m.Get(t.Context(), "pair")
			if err != nil {
				t.Fatal(err)
			}
			c := newCompactor(m.Providers(), Options{})
			n, gen := l.Len(), l.ReplaceGeneration()
			nextCalled := false
			next := func(context.Context) (driver.RequestErrorDecision, error) {
				nextCalled = true
				return driver.RequestErrorDecision{}, nil
			}
			p := &driver.RequestErrorPayload{Agent: a, Turn: 1, Step: 2, Provider: "p",
				Failure: &llm.Failure{Code: llm.CodeContextWindowExceeded, Message: "too long"}}
			d, err := c.requestError(t.Context(), p, next)
			if err != nil || d.Retry != tt.wantRetry || nextCalled == tt.wantRetry {
				t.Fatalf("decision %+v err %v next called %v", d, err, nextCalled)
			}
			var got []session.Type
			for _, ev := range l.Events(n, l.Len()) {
				got = append(got, ev.Type)
			}
			if len(got) != len(tt.wantTypes) || (len(got) > 0 && (got[0] != tt.wantTypes[0] || got[1] != tt.wantTypes[1])) {
				t.Fatalf("appended %v, want %v", got, tt.wantTypes)
			}
			if (l.ReplaceGeneration() > gen) != tt.wantRetry {
				t.Fatalf("generation %d -> %d", gen, l.ReplaceGeneration())
			}
			// Other failures are not compaction's business.
			nextCalled = false
			p.Failure = &llm.Failure{Code: llm.CodeRateLimit}
			if _, err := c.requestError(t.Context(), p, next); err != nil || !nextCalled {
				t.Fatal("a rate limit did not go to next")
			}
		})
	}
}
