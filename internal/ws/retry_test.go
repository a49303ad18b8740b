package ws_test

import (
	"encoding/json"
	"testing"

	"harness/client"
	"harness/internal/llm/fake"
)

// TestRetryOp: the retry op sends a failed turn's prompt again as a new
// message (answered with its id, which the log holds with the same text);
// a turn that did not fail is bad_request, a stranger's retry not_found.
func TestRetryOp(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{script: fake.Script{Replies: []fake.Reply{
		{Error: &fake.HTTPError{Status: 401, Message: "Incorrect API key provided"}},
		{Text: "Recovered."},
	}}})
	id := e.session(client.NewSession{})
	cn := e.dial(e.alice)
	if _, err := cn.Followup(t.Context(), id, "do the thing"); err != nil {
		t.Fatal(err)
	}
	e.waitIdle(id)
	if _, err := e.dial(e.bob).Retry(t.Context(), id, 1); client.CodeOf(err) != "not_found" {
		t.Errorf("a stranger's retry: %v, want not_found", err)
	}
	msg, err := cn.Retry(t.Context(), id, 1)
	if err != nil || msg == "" {
		t.Fatalf("retry: %q, %v", msg, err)
	}
	e.waitIdle(id)
	var texts []string
	found := false
	for _, ev := range e.fullLog(id) {
		if ev.Type != "user/message" {
			continue
		}
		var m struct {
			ID      string `json:"id"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		if err := json.Unmarshal(ev.Data, &m); err != nil || len(m.Content) == 0 {
			continue
		}
		texts = append(texts, m.Content[0].Text)
		found = found || m.ID == msg && m.Content[0].Text == "do the thing"
	}
	if !found {
		t.Errorf("the log's user messages %q lack the retried prompt %s", texts, msg)
	}
	if _, err := cn.Retry(t.Context(), id, 2); client.CodeOf(err) != "bad_request" {
		t.Errorf("retry of a completed turn: %v, want bad_request", err)
	}
}
