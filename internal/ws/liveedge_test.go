package ws_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"harness/client"
	"harness/internal/auth"
	"harness/internal/session"
	"harness/internal/ws"
)

// covered flattens what a subscriber received into the seqs it stands for:
// a merged event (From set) covers From..Seq.
func covered(evs []client.Event) []int64 {
	var out []int64
	for _, ev := range evs {
		from := ev.Seq
		if ev.From > 0 {
			from = ev.From
		}
		for s := from; s <= ev.Seq; s++ {
			out = append(out, s)
		}
	}
	return out
}

// deltaText is the text of a text or reasoning delta event ("" otherwise)
// and its block.
func deltaText(t *testing.T, ev client.Event) (block, text string) {
	t.Helper()
	if ev.Type != "assistant/chunk" {
		return "", ""
	}
	d := decode[struct {
		Turn, Step int
		Chunk      struct {
			Type, Text string
			Index      int
		}
	}](t, ev.Data)
	if d.Chunk.Type != "text-delta" && d.Chunk.Type != "reasoning-delta" {
		return "", ""
	}
	return fmt.Sprintf("%s %d/%d/%d", d.Chunk.Type, d.Turn, d.Step, d.Chunk.Index), d.Chunk.Text
}

// sameStream fails unless got (maybe with merged deltas) covers want's
// seqs once each and in order, non-delta events are want's byte for byte,
// and each block's text is the concatenation of want's deltas.
func sameStream(t *testing.T, got, want []client.Event) {
	t.Helper()
	cov := covered(got)
	if len(cov) != len(want) {
		t.Fatalf("received events cover %d seqs, want %d", len(cov), len(want))
	}
	for i, s := range cov {
		if s != want[i].Seq {
			t.Fatalf("seq %d at position %d, want %d", s, i, want[i].Seq)
		}
	}
	bySeq := map[int64]client.Event{}
	wantText := map[string]string{}
	for _, ev := range want {
		bySeq[ev.Seq] = ev
		if b, text := deltaText(t, ev); b != "" {
			wantText[b] += text
		}
	}
	gotText := map[string]string{}
	for _, ev := range got {
		w := bySeq[ev.Seq]
		if b, text := deltaText(t, ev); b != "" {
			gotText[b] += text
			if ev.Time != w.Time {
				t.Fatalf("merged event %d has time %d, want the last delta's %d", ev.Seq, ev.Time, w.Time)
			}
			continue
		}
		if ev.From != 0 || ev.Type != w.Type || string(ev.Data) != string(w.Data) || ev.Time != w.Time {
			t.Fatalf("event %d differs:\n got  %s %s\n want %s %s", ev.Seq, ev.Type, ev.Data, w.Type, w.Data)
		}
	}
	for b, text := range wantText {
		if gotText[b] != text {
			t.Fatalf("block %s: text of %d bytes, want %d", b, len(gotText[b]), len(text))
		}
	}
}

// batchEvents reads a batch subscription until turn n ends: the events of
// its session/events pushes, and how many pushes carried more than one.
func batchEvents(t *testing.T, sub *client.Subscription, n int) (evs []client.Event, multi int) {
	t.Helper()
	end := turnEnded(n)
	for _, p := range collect(t, sub, func(p client.Push) bool {
		if p.Ch != client.ChEvents {
			return false
		}
		for _, ev := range p.Events {
			if end(client.Push{Ch: client.ChEvent, Event: &ev}) {
				return true
			}
		}
		return false
	}) {
		if p.Ch == client.ChEvent {
			t.Fatalf("a batch subscriber got a session/event push (seq %d)", p.Event.Seq)
		}
		if p.Ch == client.ChEvents {
			evs = append(evs, p.Events...)
			if len(p.Events) > 1 {
				multi++
			}
		}
	}
	return evs, multi
}

// A subscriber that stops reading during an unpaced burst of 10,000 chunks
// is not cut (the queue is bounded in bytes, not frames) and, once it
// reads again, gets every seq once and in order; a batch subscriber gets
// them with the deltas it fell behind on merged.
func TestSlowReaderIsNotCut(t *testing.T) {
	t.Parallel()
	// The write watchdog would drop a socket stuck for WriteTimeout; this
	// reader pauses longer than a loaded machine may need for the burst.
	e := newEnv(t, envOptions{demoDelay: -1, ws: ws.Options{WriteTimeout: 5 * time.Minute}})
	id := e.session(client.NewSession{Provider: "demo"})
	tok, err := e.app.Auth.CreateToken(t.Context(), "alice", "slow")
	if err != nil {
		t.Fatal(err)
	}
	slowC := smallBufferClient(e.url, tok)
	subs := map[bool]*client.Subscription{}
	for _, batch := range []bool{false, true} {
		cn, err := slowC.Dial(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cn.Close() })
		sub, err := cn.Subscribe(t.Context(), id, -1, client.SubscribeOptions{Buffer: 1, Batch: batch})
		if err != nil {
			t.Fatal(err)
		}
		subs[batch] = sub
	}
	if _, err := e.alice.SendMessage(t.Context(), id, "long: 10000", "followup"); err != nil {
		t.Fatal(err)
	}
	// Read nothing until the burst is over.
	e.waitIdle(id)
	want := e.fullLog(id)

	plain := eventsOf(collect(t, subs[false], turnEnded(1)))
	sameEvents(t, plain, want)
	batched, _ := batchEvents(t, subs[true], 1)
	sameStream(t, batched, want)
	if n := e.app.Hub.Stats().SlowClosed; n != 0 {
		t.Fatalf("%d connections cut", n)
	}
}

// A batch subscriber gets the replay in session/events pushes of at most
// ReplayPage events, byte for byte as stored, and live events that queued
// up behind a slow socket in one push, runs of deltas merged: the text of
// each block is the concatenation of its deltas.
func TestBatchReplayAndMergedDeltas(t *testing.T) {
	t.Parallel()
	const page = 64
	e := newEnv(t, envOptions{demoDelay: -1, ws: ws.Options{ReplayPage: page, WriteTimeout: 5 * time.Minute}})
	id := e.session(client.NewSession{Provider: "demo"})
	if _, err := e.alice.SendMessage(t.Context(), id, "long: 500", "followup"); err != nil {
		t.Fatal(err)
	}
	e.waitIdle(id)
	first := e.fullLog(id)

	tok, err := e.app.Auth.CreateToken(t.Context(), "alice", "batch")
	if err != nil {
		t.Fatal(err)
	}
	cn, err := smallBufferClient(e.url, tok).Dial(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cn.Close() })
	sub, err := cn.Subscribe(t.Context(), id, -1, client.SubscribeOptions{Buffer: 1, Batch: true})
	if err != nil {
		t.Fatal(err)
	}
	var replayed []client.Event
	pushes := 0
	for _, p := range collect(t, sub, func(p client.Push) bool { return p.Ch == client.ChReplayDone }) {
		if p.Ch == client.ChEvents {
			pushes++
			if len(p.Events) > page {
				t.Fatalf("a replay push of %d events, want at most %d", len(p.Events), page)
			}
			replayed = append(replayed, p.Events...)
		}
	}
	sameEvents(t, replayed, first)
	if want := (len(first) + page - 1) / page; pushes != want {
		t.Fatalf("replay in %d pushes, want %d", pushes, want)
	}

	// Live: the reader stalls for the whole turn, so the events pile up
	// in the server's queue and go out coalesced.
	if _, err := e.alice.SendMessage(t.Context(), id, "long: 4000", "followup"); err != nil {
		t.Fatal(err)
	}
	e.waitIdle(id)
	live, multi := batchEvents(t, sub, 2)
	all := e.fullLog(id)
	sameStream(t, live, all[len(first):])
	merged := 0
	for _, ev := range live {
		if ev.From > 0 {
			merged++
		}
	}
	if multi == 0 || merged == 0 {
		t.Fatalf("%d pushes of several events, %d merged events; the stalled reader's events were not coalesced", multi, merged)
	}
}

// countingProjections counts projections made, events applied and
// fragments rendered per seq and viewer class.
type countingProjections struct {
	mu        sync.Mutex
	made      int
	applied   map[int64]int
	fragments map[int64]map[string]int
}

func (c *countingProjections) make(string, *session.Log, int64) ws.Projector {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.made++
	return &countingProjector{c: c}
}

type countingProjector struct {
	c   *countingProjections
	seq int64
}

func (p *countingProjector) Apply(ev session.Event) error {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	p.seq = ev.Seq
	p.c.applied[ev.Seq]++
	return nil
}

func (p *countingProjector) Fragment(canAnswer bool, viewer string) (string, error) {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	class := fmt.Sprintf("%v %s", canAnswer, viewer)
	if p.c.fragments[p.seq] == nil {
		p.c.fragments[p.seq] = map[string]int{}
	}
	p.c.fragments[p.seq][class]++
	return fmt.Sprintf("<p>%d %s</p>", p.seq, class), nil
}

// Fifty HTML subscribers of two viewer classes (the owner, who may answer,
// and a read-only member) cost one Apply per event and one Fragment per
// class, and each subscriber gets its class's fragment.
func TestProjectorRendersOncePerViewerClass(t *testing.T) {
	t.Parallel()
	cp := &countingProjections{applied: map[int64]int{}, fragments: map[int64]map[string]int{}}
	e := newEnv(t, envOptions{projections: cp.make})
	id := e.session(client.NewSession{Provider: "demo"})
	if err := e.app.Auth.AddMember(t.Context(), id, "bob", auth.SessionRoleViewer); err != nil {
		t.Fatal(err)
	}
	s, err := e.alice.GetSession(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	head := s.Head
	classes := map[*client.Client]string{
		e.alice: "true " + e.aliceID,
		e.bob:   "false " + e.bobID,
	}
	type viewer struct {
		sub   *client.Subscription
		class string
	}
	var viewers []viewer
	for i := range 50 {
		c := e.alice
		if i%2 == 1 {
			c = e.bob
		}
		// Since = head: nothing to replay, so only the topic renders.
		sub, err := e.dial(c).Subscribe(t.Context(), id, head, client.SubscribeOptions{RenderHTML: true, Batch: i%4 >= 2})
		if err != nil {
			t.Fatal(err)
		}
		viewers = append(viewers, viewer{sub, classes[c]})
	}
	if _, err := e.alice.SendMessage(t.Context(), id, "long: 50", "followup"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(viewers))
	for _, v := range viewers {
		wg.Go(func() {
			for p := range v.sub.C {
				evs := p.Events
				if p.Ch == client.ChEvent {
					evs = []client.Event{*p.Event}
				} else if p.Ch != client.ChEvents {
					continue
				}
				var want strings.Builder
				done := false
				for _, ev := range evs {
					from := ev.Seq
					if ev.From > 0 {
						from = ev.From
					}
					for s := from; s <= ev.Seq; s++ {
						if p.Ch == client.ChEvents {
							fmt.Fprintf(&want, `<template data-op="at" data-seq="%d"></template>`, s)
						}
						fmt.Fprintf(&want, "<p>%d %s</p>", s, v.class)
					}
					done = done || ev.Type == "turn/end"
				}
				if p.HTML != want.String() {
					errs <- fmt.Errorf("class %s: html %q, want %q", v.class, p.HTML, want.String())
					return
				}
				if done {
					return
				}
			}
			errs <- fmt.Errorf("class %s: subscription ended early", v.class)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if cp.made != 1 {
		t.Fatalf("%d projections made, want the topic's one", cp.made)
	}
	if len(cp.applied) == 0 {
		t.Fatal("nothing was applied")
	}
	for seq, n := range cp.applied {
		if n != 1 {
			t.Fatalf("seq %d applied %d times", seq, n)
		}
		if got := cp.fragments[seq]; len(got) != 2 || got["true "+e.aliceID] != 1 || got["false "+e.bobID] != 1 {
			t.Fatalf("seq %d rendered %v, want once per class", seq, got)
		}
	}
}

// Subscribers joining while an unpaced 10,000-chunk turn streams get every
// seq exactly once: the replay up to the join, the live tail after it.
func TestJoinDuringBurstHasNoGapOrDuplicate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{demoDelay: -1})
	id := e.session(client.NewSession{Provider: "demo"})
	watch := subscribe(t, e.dial(e.alice), id, -1)
	collect(t, watch, func(p client.Push) bool { return p.Ch == client.ChReplayDone })
	if _, err := e.alice.SendMessage(t.Context(), id, "long: 10000", "followup"); err != nil {
		t.Fatal(err)
	}
	type joined struct {
		sub   *client.Subscription
		batch bool
	}
	var joins []joined
	// Join at points spread over the burst: after every 1,500 live events
	// the watcher sees, one plain and one batch subscriber.
	seen := 0
	for _, p := range collect(t, watch, func(p client.Push) bool {
		if p.Ch == client.ChEvent {
			seen++
			if seen%1500 == 0 && len(joins) < 10 {
				for _, batch := range []bool{false, true} {
					sub, err := e.dial(e.alice).Subscribe(t.Context(), id, -1, client.SubscribeOptions{Batch: batch})
					if err != nil {
						t.Fatal(err)
					}
					joins = append(joins, joined{sub, batch})
				}
			}
		}
		return turnEnded(1)(p)
	}) {
		_ = p
	}
	e.waitIdle(id)
	want := e.fullLog(id)
	if len(joins) == 0 {
		t.Fatal("nobody joined during the burst")
	}
	for _, j := range joins {
		if j.batch {
			got, _ := batchEvents(t, j.sub, 1)
			sameStream(t, got, want)
		} else {
			sameEvents(t, eventsOf(collect(t, j.sub, turnEnded(1))), want)
		}
	}
}
