package driver_test

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"harness/internal/driver"
	"harness/internal/llm"
	"harness/internal/session"
)

// No stranded input: messages sent at random moments, many of them while the
// driver is finishing a turn and going idle, are all claimed — every one
// enters exactly one turn and the agent ends idle with an empty inbox. Run
// with -race.
func TestNoStrandedInput(t *testing.T) {
	t.Parallel()
	p := &chunkProvider{name: "instant"}
	h := newHarness(t, script(), withProvider(p))
	const senders, perSender = 4, 40
	sent := make(chan string, senders*perSender)
	var wg sync.WaitGroup
	for g := range senders {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for i := range perSender {
				m := userMsg("msg")
				var err error
				switch i % 3 {
				case 0, 1:
					err = h.agent.Followup(h.ctx, m)
				default:
					err = h.agent.Steer(h.ctx, m)
				}
				if err != nil {
					t.Error(err)
					return
				}
				sent <- m.ID
				// Aim at the idle transition: wait for the agent to go idle
				// about half of the time, else a random short pause.
				if rng.IntN(2) == 0 {
					<-h.agent.WhenIdle()
				} else {
					time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond) // shapes load: lands sends at random points of a turn
				}
			}
		})
	}
	wg.Wait()
	close(sent)
	h.idle()

	entered := map[string]int{}
	for _, m := range find[llm.Message](h, session.TypeUserMessage) {
		entered[m.ID]++
	}
	n := 0
	for id := range sent {
		n++
		if entered[id] != 1 {
			t.Fatalf("message %s entered %d times", id, entered[id])
		}
	}
	if q := h.agent.Queue(); len(q.Queued)+len(q.Steering) != 0 {
		t.Fatalf("stranded input: %+v", q)
	}
	if h.agent.Status() != driver.StatusIdle {
		t.Fatal("not idle")
	}
	if n != senders*perSender {
		t.Fatalf("sent %d", n)
	}
}
