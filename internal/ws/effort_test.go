package ws_test

import (
	"encoding/json"
	"testing"

	"harness/client"
	"harness/internal/llm/fake"
	"harness/internal/llm/openai"
)

// TestSetEffortOverTheSocket: set_effort from a writer reaches another
// viewer's subscription as a model/effort event at once, and the next
// turn's request (the real go-openai client against the fake server) sends
// DeepSeek's thinking switch and reasoning_effort for it. A viewer and an
// unknown effort are refused.
func TestSetEffortOverTheSocket(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{script: fake.Script{Responder: func(fake.Recorded) fake.Reply {
		return fake.Reply{Text: "ok"}
	}}})
	ctx := t.Context()
	id := e.session(client.NewSession{Provider: "fake"})
	if err := e.alice.AddMember(ctx, id, "bob", "viewer"); err != nil {
		t.Fatal(err)
	}
	cn, bc := e.dial(e.alice), e.dial(e.bob)
	watch := subscribe(t, bc, id, -1)
	collect(t, watch, func(p client.Push) bool { return p.Ch == client.ChReplayDone })

	if err := bc.SetEffort(ctx, id, "off"); client.CodeOf(err) != "forbidden" {
		t.Errorf("a viewer's set_effort: %v, want forbidden", err)
	}
	if err := cn.SetEffort(ctx, id, "medium"); client.CodeOf(err) != "bad_request" {
		t.Errorf("set_effort medium: %v, want bad_request", err)
	}

	cases := []struct {
		effort                   string
		wantThinking, wantEffort string
	}{
		{"low", "enabled", "low"},
		{"max", "enabled", "max"},
		{"off", "disabled", ""},
		{"", "enabled", "high"}, // the DeepSeek route's default
	}
	for turn, c := range cases {
		if err := cn.SetEffort(ctx, id, c.effort); err != nil {
			t.Fatalf("set_effort %q: %v", c.effort, err)
		}
		ps := collect(t, watch, func(p client.Push) bool { return p.Ch == client.ChEvent && p.Event.Type == "model/effort" })
		var d struct {
			Effort string `json:"effort"`
			By     struct {
				Name string `json:"name"`
			} `json:"by"`
		}
		if err := json.Unmarshal(ps[len(ps)-1].Event.Data, &d); err != nil || d.Effort != c.effort || d.By.Name != "alice" {
			t.Fatalf("the viewer got model/effort %s (%v), want effort %q by alice", ps[len(ps)-1].Event.Data, err, c.effort)
		}
		before := len(e.fake.Requests())
		if _, err := cn.Followup(ctx, id, "go"); err != nil {
			t.Fatal(err)
		}
		collect(t, watch, turnEnded(turn+1))
		var body map[string]any
		for _, r := range e.fake.Requests()[before:] {
			if r.Header.Get(openai.HeaderPurpose) == "" {
				body = r.Body
			}
		}
		if body == nil {
			t.Fatalf("effort %q: no conversation request reached the model", c.effort)
		}
		th, _ := body["thinking"].(map[string]any)
		effort, _ := body["reasoning_effort"].(string)
		if th["type"] != c.wantThinking || effort != c.wantEffort {
			t.Errorf("effort %q: sent thinking %v reasoning_effort %q, want %q %q", c.effort, th["type"], effort, c.wantThinking, c.wantEffort)
		}
	}
	row, err := e.alice.GetSession(ctx, id)
	if err != nil || row.Effort != "" {
		t.Fatalf("row effort %q (%v), want the default", row.Effort, err)
	}
}
