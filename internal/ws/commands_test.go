package ws_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"harness/client"
	"harness/internal/llm/fake"
)

type stepData struct {
	Turn int `json:"turn"`
	Step int `json:"step"`
}

// A steer sent while a tool runs enters the same turn at the next step: its
// user/message comes after the tool's result, in step 2 of turn 1.
func TestSteerDuringToolCallEntersNextStep(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	id := e.session(client.NewSession{Provider: "demo", Mode: "auto"})
	cn := e.dial(e.alice)
	sub := subscribe(t, cn, id, -1)
	if _, err := cn.Followup(t.Context(), id, "run: sleep 0.5; echo hi"); err != nil {
		t.Fatal(err)
	}
	before := collect(t, sub, func(p client.Push) bool { return p.Ch == client.ChEvent && p.Event.Type == "tool/call" })
	steerID, err := cn.Steer(t.Context(), id, "and then say bye")
	if err != nil {
		t.Fatal(err)
	}
	after := collect(t, sub, turnEnded(1))
	evs := append(eventsOf(before), eventsOf(after)...)

	result, steer := -1, -1
	var steerStep stepData
	for i, ev := range evs {
		switch ev.Type {
		case "tool/result":
			result = i
		case "user/message":
			if m := decode[client.Message](t, ev.Data); m.ID == steerID {
				steer = i
				// The step/start before it says where it entered.
				for j := i - 1; j >= 0; j-- {
					if evs[j].Type == "step/start" {
						steerStep = decode[stepData](t, evs[j].Data)
						break
					}
				}
			}
		}
	}
	if result < 0 || steer < 0 || steer < result {
		t.Fatalf("tool/result at %d, steer user/message at %d: the steer must follow the result", result, steer)
	}
	if steerStep.Turn != 1 || steerStep.Step != 2 {
		t.Fatalf("steer entered at turn %d step %d, want turn 1 step 2", steerStep.Turn, steerStep.Step)
	}
	var turns int
	for _, ev := range evs {
		if ev.Type == "turn/start" {
			turns++
		}
	}
	if turns != 1 {
		t.Fatalf("%d turns, want 1", turns)
	}
}

// Followups queued while a long stream runs can be edited and removed;
// the queue pushes show every change and the remaining items run in order.
func TestQueueEditAndRemove(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{demoDelay: 3 * time.Millisecond})
	id := e.session(client.NewSession{Provider: "demo"})
	cn := e.dial(e.alice)
	sub := subscribe(t, cn, id, -1)
	ctx := t.Context()
	if _, err := cn.Followup(ctx, id, "long: 400"); err != nil {
		t.Fatal(err)
	}
	collect(t, sub, func(p client.Push) bool { return p.Ch == client.ChEvent && p.Event.Type == "assistant/chunk" })
	a, err := cn.Followup(ctx, id, "first")
	if err != nil {
		t.Fatal(err)
	}
	b, err := cn.Followup(ctx, id, "second")
	if err != nil {
		t.Fatal(err)
	}
	c, err := cn.Followup(ctx, id, "third")
	if err != nil {
		t.Fatal(err)
	}
	s, err := e.alice.GetSession(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != client.StatusRunning || len(s.Queue.Queued) != 3 {
		t.Fatalf("session %s with %d queued, want running with 3", s.Status, len(s.Queue.Queued))
	}
	if err := cn.InboxEdit(ctx, id, a, "first, edited"); err != nil {
		t.Fatal(err)
	}
	if err := cn.InboxRemove(ctx, id, b); err != nil {
		t.Fatal(err)
	}
	if err := cn.InboxRemove(ctx, id, b); client.CodeOf(err) != "item_not_found" {
		t.Fatalf("second remove: %v, want item_not_found", err)
	}
	// The last queue snapshot before turn 1 ends lists first (edited), third.
	ps := collect(t, sub, func(p client.Push) bool {
		return p.Ch == client.ChInbox && len(p.Queue.Queued) == 2 && p.Queue.Queued[0].Text() == "first, edited"
	})
	q := ps[len(ps)-1].Queue
	if q.Queued[0].ID != a || q.Queued[1].ID != c {
		t.Fatalf("queue %+v, want [%s %s]", q.Queued, a, c)
	}
	var discarded int
	for _, p := range ps {
		if p.Ch == client.ChInboxDiscarded {
			discarded++
		}
	}
	if discarded != 2 { // the edit replaces, the removal discards
		t.Errorf("%d discarded pushes, want 2", discarded)
	}
	collect(t, sub, turnEnded(3))
	e.waitIdle(id)
	var prompts []string
	for _, ev := range e.fullLog(id) {
		if ev.Type == "user/message" {
			if m := decode[client.Message](t, ev.Data); m.Source.Kind == "user" {
				prompts = append(prompts, m.Text())
			}
		}
	}
	if want := []string{"long: 400", "first, edited", "third"}; strings.Join(prompts, "|") != strings.Join(want, "|") {
		t.Fatalf("prompts %q, want %q", prompts, want)
	}
}

// An approval asked in mode ask and answered from a second connection
// resolves for both, and the turn completes.
func TestApprovalAnsweredFromSecondConnection(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	id := e.session(client.NewSession{Provider: "demo"}) // mode ask
	c1, c2 := e.dial(e.alice), e.dial(e.alice)
	s1, s2 := subscribe(t, c1, id, -1), subscribe(t, c2, id, -1)
	if _, err := c1.Followup(t.Context(), id, "run: echo hi"); err != nil {
		t.Fatal(err)
	}
	requested := func(p client.Push) bool { return p.Ch == client.ChInteractionRequested }
	r1 := collect(t, s1, requested)
	r2 := collect(t, s2, requested)
	in1, in2 := r1[len(r1)-1].Interaction, r2[len(r2)-1].Interaction
	if in1.ID != in2.ID || in1.Kind != "approval" || in1.ToolName != "bash" {
		t.Fatalf("requested %+v and %+v", in1, in2)
	}
	// A third connection subscribing now gets the pending request too.
	c3 := e.dial(e.alice)
	s3 := subscribe(t, c3, id, -1)
	r3 := collect(t, s3, requested)
	if r3[len(r3)-1].Interaction.ID != in1.ID {
		t.Fatal("a late subscriber did not get the pending approval")
	}

	if err := c2.Approve(t.Context(), id, in1.ID, true); err != nil {
		t.Fatal(err)
	}
	if err := c1.Approve(t.Context(), id, in1.ID, false); client.CodeOf(err) != "not_pending" {
		t.Fatalf("second answer: %v, want not_pending", err)
	}
	resolved := func(p client.Push) bool { return p.Ch == client.ChInteractionResolved }
	for i, s := range []*client.Subscription{s1, s2, s3} {
		ps := collect(t, s, resolved)
		in := ps[len(ps)-1].Interaction
		if in.ID != in1.ID || in.Outcome != "allowed-once" || in.By == nil || in.By.UserID != e.aliceID {
			t.Fatalf("subscriber %d: resolved %+v", i+1, in)
		}
	}
	end := collect(t, s1, turnEnded(1))
	var out string
	for _, ev := range eventsOf(end) {
		if ev.Type == "tool/result" {
			out = string(ev.Data)
		}
		if ev.Type == "turn/end" && !strings.Contains(string(ev.Data), `"completed"`) {
			t.Fatalf("turn ended %s", ev.Data)
		}
	}
	if !strings.Contains(out, "hi") {
		t.Fatalf("tool result %s lacks the output", out)
	}
}

// Cancel mid-stream ends the turn aborted; the interrupted assistant
// message keeps the text streamed so far.
func TestCancelMidStream(t *testing.T) {
	t.Parallel()
	words := strings.Repeat("word ", 40)
	e := newEnv(t, envOptions{script: fake.Script{Replies: []fake.Reply{{
		Text: words, Chunks: 40, Fault: &fake.Fault{Kind: fake.FaultStall, After: 6},
	}}}})
	id := e.session(client.NewSession{}) // the fake route
	cn := e.dial(e.alice)
	sub := subscribe(t, cn, id, -1)
	if _, err := cn.Followup(t.Context(), id, "go"); err != nil {
		t.Fatal(err)
	}
	var streamed strings.Builder
	n := 0
	collect(t, sub, func(p client.Push) bool {
		if p.Ch == client.ChEvent && p.Event.Type == "assistant/chunk" {
			var d struct {
				Chunk struct{ Type, Text string } `json:"chunk"`
			}
			_ = json.Unmarshal(p.Event.Data, &d)
			if d.Chunk.Type == "text-delta" {
				streamed.WriteString(d.Chunk.Text)
				n++
			}
		}
		return n == 6
	})
	if err := cn.Cancel(t.Context(), id, false); err != nil {
		t.Fatal(err)
	}
	evs := eventsOf(collect(t, sub, turnEnded(1)))
	var msg struct {
		Message     client.Message `json:"message"`
		Interrupted bool           `json:"interrupted"`
	}
	var end struct {
		Reason struct {
			Kind   string `json:"kind"`
			Reason struct {
				Kind   string `json:"kind"`
				UserID string `json:"userId"`
			} `json:"reason"`
		} `json:"reason"`
	}
	for _, ev := range evs {
		switch ev.Type {
		case "assistant/message":
			msg = decode[struct {
				Message     client.Message `json:"message"`
				Interrupted bool           `json:"interrupted"`
			}](t, ev.Data)
		case "turn/end":
			end = decode[struct {
				Reason struct {
					Kind   string `json:"kind"`
					Reason struct {
						Kind   string `json:"kind"`
						UserID string `json:"userId"`
					} `json:"reason"`
				} `json:"reason"`
			}](t, ev.Data)
		}
	}
	if end.Reason.Kind != "aborted" || end.Reason.Reason.Kind != "user" || end.Reason.Reason.UserID != e.aliceID {
		t.Fatalf("turn/end %+v, want aborted by alice", end)
	}
	if !msg.Interrupted || msg.Message.Text() != streamed.String() || streamed.Len() == 0 {
		t.Fatalf("assistant message %q (interrupted %v), want the streamed %q", msg.Message.Text(), msg.Interrupted, streamed.String())
	}
}
