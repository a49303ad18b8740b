package ws_test

import (
	"strings"
	"testing"
	"time"

	"harness/client"
)

// The end-to-end check: a steer "run: echo steered" sent while
// "long: 2000" streams enters the turn at step 2, whose bash call runs;
// a third step follows in which the model quotes the tool's output (the
// tools step no longer ends the turn before the model sees the result).
func TestSteerRunDuringLongStreamQuotesOutput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{demoDelay: time.Millisecond})
	id := e.session(client.NewSession{Provider: "demo", Mode: "auto"})
	cn := e.dial(e.alice)
	sub := subscribe(t, cn, id, -1)
	if _, err := cn.Followup(t.Context(), id, "long: 2000"); err != nil {
		t.Fatal(err)
	}
	before := collect(t, sub, func(p client.Push) bool { return p.Ch == client.ChEvent && p.Event.Type == "assistant/chunk" })
	if _, err := cn.Steer(t.Context(), id, "run: echo steered"); err != nil {
		t.Fatal(err)
	}
	after := collect(t, sub, turnEnded(1))
	evs := append(eventsOf(before), eventsOf(after)...)

	type message struct {
		Turn    int `json:"turn"`
		Step    int `json:"step"`
		Message struct {
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"message"`
	}
	var steps, results int
	var last message
	for _, ev := range evs {
		switch ev.Type {
		case "step/start":
			steps++
		case "tool/result":
			results++
		case "assistant/message":
			last = decode[message](t, ev.Data)
		case "turn/end":
			if r := decode[struct {
				Reason struct {
					Kind string `json:"kind"`
				} `json:"reason"`
			}](t, ev.Data); r.Reason.Kind != "completed" {
				t.Fatalf("turn ended %s", r.Reason.Kind)
			}
		}
	}
	if steps != 3 || results != 1 {
		t.Fatalf("%d steps, %d tool results; want 3 steps (text, the steered bash call, the answer) and 1 result", steps, results)
	}
	var text strings.Builder
	for _, b := range last.Message.Content {
		if b.Type == "text" {
			text.WriteString(b.Text)
		}
	}
	if last.Step != 3 || !strings.Contains(text.String(), "echo steered") || !strings.Contains(text.String(), "\nsteered\n") {
		t.Fatalf("the last step (%d) does not quote the tool's output: %q", last.Step, text.String())
	}
}

// Stop (cancel with keepInbox) pauses the queue: the agent goes idle with
// the message still queued and nothing starts by itself. inbox.run starts
// it; inbox.clear empties the queue; inbox.run answers busy while a turn
// runs and item_not_found on an empty queue. The REST routes do the same.
func TestStopPausesQueueRunAndClear(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{demoDelay: time.Millisecond})
	id := e.session(client.NewSession{Provider: "demo"})
	cn := e.dial(e.alice)
	sub := subscribe(t, cn, id, -1)
	ctx := t.Context()
	stopWithQueued := func(turn int, text string) string {
		t.Helper()
		if _, err := cn.Followup(ctx, id, "long: 3000"); err != nil {
			t.Fatal(err)
		}
		collect(t, sub, func(p client.Push) bool { return p.Ch == client.ChEvent && p.Event.Type == "assistant/chunk" })
		if err := cn.InboxRun(ctx, id); client.CodeOf(err) != "busy" {
			t.Fatalf("inbox.run while running: %v, want busy", err)
		}
		queued, err := cn.Followup(ctx, id, text)
		if err != nil {
			t.Fatal(err)
		}
		if err := cn.Cancel(ctx, id, true); err != nil {
			t.Fatal(err)
		}
		collect(t, sub, turnEnded(turn))
		e.waitIdle(id)
		// Proves a negative: the kept queue does not start within 50 ms.
		time.Sleep(50 * time.Millisecond)
		s, err := e.alice.GetSession(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if s.Status != client.StatusIdle || len(s.Queue.Queued) != 1 || s.Queue.Queued[0].ID != queued {
			t.Fatalf("after Stop: %s with queue %+v, want idle with the message queued", s.Status, s.Queue)
		}
		return queued
	}

	queued := stopWithQueued(1, "run me next")
	if err := cn.InboxRun(ctx, id); err != nil {
		t.Fatal(err)
	}
	collect(t, sub, turnEnded(2))
	e.waitIdle(id)
	var prompts []string
	for _, ev := range e.fullLog(id) {
		if ev.Type == "user/message" {
			if m := decode[client.Message](t, ev.Data); m.Source.Kind == "user" {
				prompts = append(prompts, m.ID)
			}
		}
	}
	if len(prompts) != 2 || prompts[1] != queued {
		t.Fatalf("prompts %v, want the queued one in turn 2", prompts)
	}
	if err := cn.InboxRun(ctx, id); client.CodeOf(err) != "item_not_found" {
		t.Fatalf("inbox.run on an empty queue: %v", err)
	}

	stopWithQueued(3, "clear me")
	if err := cn.InboxClear(ctx, id); err != nil {
		t.Fatal(err)
	}
	collect(t, sub, func(p client.Push) bool { return p.Ch == client.ChInbox && len(p.Queue.Queued) == 0 })

	// REST: the same through the token client.
	stopWithQueued(4, "rest run")
	if err := e.alice.RunQueue(ctx, id); err != nil {
		t.Fatal(err)
	}
	collect(t, sub, turnEnded(5))
	e.waitIdle(id)
	stopWithQueued(6, "rest clear")
	if err := e.alice.ClearQueue(ctx, id); err != nil {
		t.Fatal(err)
	}
	if s, _ := e.alice.GetSession(ctx, id); len(s.Queue.Queued) != 0 || s.Status != client.StatusIdle {
		t.Fatalf("after REST clear: %+v", s.Queue)
	}
	if _, err := e.bob.GetSession(ctx, id); err == nil {
		t.Fatal("bob sees alice's session")
	}
	if err := e.bob.ClearQueue(ctx, id); client.CodeOf(err) != "not_found" {
		t.Fatalf("bob clears alice's queue: %v", err)
	}
}
