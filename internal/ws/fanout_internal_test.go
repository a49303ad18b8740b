package ws

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"harness/internal/service"
	"harness/internal/testkit/poll"
)

// wireEvent is what the test reads of an event in a frame.
type wireEvent struct {
	Seq  int64  `json:"seq"`
	Type string `json:"type"`
	From int64  `json:"from"`
}

// replayDone drains c until replay/done.
func replayDone(t *testing.T, c *conn) {
	t.Helper()
	done := false
	poll.Eventually(t, "replay/done", func() bool {
		for _, f := range frames(c) {
			done = done || bytes.Contains(f, []byte(`"ch":"replay/done"`))
		}
		return done
	})
}

// liveFrames drains c until turn/end arrived, returning each event frame's
// events (c's replay is done).
func liveFrames(t *testing.T, c *conn) [][]wireEvent {
	t.Helper()
	var out [][]wireEvent
	ended, n := false, 0
	defer func() {
		if !ended {
			t.Logf("%d frames, %d event frames", n, len(out))
		}
	}()
	poll.Eventually(t, "the turn's end on the socket", func() bool {
		for _, f := range frames(c) {
			n++
			var p struct {
				Ch     Channel     `json:"ch"`
				Event  *wireEvent  `json:"event"`
				Events []wireEvent `json:"events"`
			}
			if err := json.Unmarshal(f, &p); err != nil {
				t.Fatalf("frame %s: %v", f, err)
			}
			switch {
			case p.Ch == ChEvent:
				out = append(out, []wireEvent{*p.Event})
			case p.Ch == ChEvents:
				out = append(out, p.Events)
			default:
				continue
			}
			for _, evs := range out[max(len(out)-1, 0):] {
				for _, ev := range evs {
					ended = ended || ev.Type == "turn/end"
				}
			}
		}
		return ended
	}, poll.Within(30*time.Second))
	return out
}

// When the projector falls behind, the events waiting for it go out as
// one fan-out: a batch subscriber gets them in one frame with the deltas
// merged, a plain subscriber still gets every event alone, both every seq
// once and in order.
func TestProjectorBehindFansOutOnce(t *testing.T) {
	t.Parallel()
	s := newStack(t, Options{})
	plain, batch := s.hub.newConn(nil, nil, s.owner), s.hub.newConn(nil, nil, s.owner)
	defer plain.shutdown()
	defer batch.shutdown()
	plain.handle(fmt.Appendf(nil, `{"id":"p","op":"subscribe","session":%q}`, s.session))
	batch.handle(fmt.Appendf(nil, `{"id":"b","op":"subscribe","session":%q,"batch":true}`, s.session))
	// Replays done first: a replay waiting for the topic would take the
	// turn's events as held frames.
	replayDone(t, plain)
	replayDone(t, batch)
	s.hub.mu.Lock()
	tp := s.hub.topics[s.session]
	s.hub.mu.Unlock()

	// Hold the projector: the turn's events wait in its mailbox.
	tp.mu.Lock()
	if _, err := s.svc.SendMessage(t.Context(), s.owner, s.session, service.Message{Content: "long: 60"}); err != nil {
		tp.mu.Unlock()
		t.Fatal(err)
	}
	poll.Eventually(t, "the turn to pile up", func() bool {
		tp.pending.mu.Lock()
		defer tp.pending.mu.Unlock()
		return len(tp.pending.items) >= 60
	}, poll.Within(30*time.Second))
	tp.mu.Unlock()

	seqsOf := func(fs [][]wireEvent) (seqs []int64, merged int) {
		for _, evs := range fs {
			for _, ev := range evs {
				from := ev.Seq
				if ev.From > 0 {
					from, merged = ev.From, merged+1
				}
				for q := from; q <= ev.Seq; q++ {
					seqs = append(seqs, q)
				}
			}
		}
		return seqs, merged
	}
	pf, bf := liveFrames(t, plain), liveFrames(t, batch)
	ps, _ := seqsOf(pf)
	bs, merged := seqsOf(bf)
	for i := 1; i < len(ps); i++ {
		if ps[i] != ps[i-1]+1 {
			t.Fatalf("plain subscriber: seq %d after %d", ps[i], ps[i-1])
		}
	}
	if len(pf) != len(ps) {
		t.Fatalf("plain subscriber: %d frames for %d events, want one each", len(pf), len(ps))
	}
	if fmt.Sprint(bs) != fmt.Sprint(ps) {
		t.Fatalf("batch subscriber covered %v, plain %v", bs, ps)
	}
	if len(bf) >= len(pf)/4 || merged == 0 {
		t.Fatalf("batch subscriber: %d frames (%d merged events) for %d events; the waiting events were not fanned out together", len(bf), merged, len(ps))
	}
}

// What a projector pass has for a subscriber goes out together: live
// frames (status, inbox) queued behind each other reach a viewer that
// keeps up in one socket write, in order.
func TestPassWritesASubscribersFramesTogether(t *testing.T) {
	t.Parallel()
	if !canTryWrite {
		t.Skip("no non-blocking writes on this platform: every frame goes through the writer")
	}
	s := newStack(t, Options{})
	server, client := tcpPair(t)
	c := s.hub.newConn(nil, newWire(server), s.owner)
	go c.writeLoop()
	defer c.shutdown()
	r := bufio.NewReader(client)
	readText := func() []byte {
		t.Helper()
		op, p, err := readFrame(r)
		if err != nil || op != 1 {
			t.Fatalf("read frame: opcode %d, %v", op, err)
		}
		return p
	}
	c.handle(fmt.Appendf(nil, `{"id":"b","op":"subscribe","session":%q,"batch":true}`, s.session))
	for !bytes.Contains(readText(), []byte(`"ch":"replay/done"`)) {
	}
	s.hub.mu.Lock()
	tp := s.hub.topics[s.session]
	s.hub.mu.Unlock()

	const n = 5
	tp.mu.Lock() // hold the projector: the frames wait in its mailbox
	for i := range n {
		tp.offerLive(fmt.Appendf(nil, `{"ch":"agent/status","session":%q,"status":"s%d"}`, s.session, i))
	}
	poll.Eventually(t, "the writer idle", func() bool {
		c.out.mu.Lock()
		defer c.out.mu.Unlock()
		return !c.out.busy && c.out.n == 0
	})
	before := s.hub.Stats()
	tp.mu.Unlock()
	for i := range n {
		if got, want := readText(), fmt.Sprintf(`"status":"s%d"`, i); !bytes.Contains(got, []byte(want)) {
			t.Fatalf("frame %d: %s, want %s", i, got, want)
		}
	}
	// The counters move once the write returned, which may be after the
	// frames were read here.
	var after Stats
	poll.Eventually(t, "the write counted", func() bool {
		after = s.hub.Stats()
		return after.FramesOut-before.FramesOut >= n
	})
	// Together: one write, or two when a loaded machine let the writer
	// take the first frame before the rest arrived; never one per frame.
	if frames, writes := after.FramesOut-before.FramesOut, after.WritesOut-before.WritesOut; frames != n || writes > 2 {
		t.Fatalf("%d frames in %d writes, want %d in 1 (2 at most)", frames, writes, n)
	}
}
