package ws_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"harness/client"
	"harness/internal/llm"
	"harness/internal/llm/fake"
)

// gatedCompaction is a fake model script whose summary requests wait at a
// gate: a test can act while a compaction is in flight.
type gatedCompaction struct {
	entered chan struct{} // one value per summary request that arrived
	gate    chan struct{} // closed to let summaries through
	once    sync.Once
}

func newGatedCompaction() *gatedCompaction {
	return &gatedCompaction{entered: make(chan struct{}, 8), gate: make(chan struct{})}
}

func (g *gatedCompaction) open() { g.once.Do(func() { close(g.gate) }) }

func (g *gatedCompaction) script() fake.Script {
	return fake.Script{Responder: func(rec fake.Recorded) fake.Reply {
		if rec.Header.Get("X-Harness-Purpose") == string(llm.PurposeCompaction) {
			g.entered <- struct{}{}
			<-g.gate
			return fake.Reply{Text: "## Primary Request and Intent\n- Keep the answers coming.\n\n## Next Step\n- (none)"}
		}
		return fake.Reply{Text: strings.Repeat("A long answer about many things. ", 60), Chunks: 4}
	}}
}

// TestCompactOp: the compact op answers with the result once the summary
// is written; meanwhile the socket keeps serving (ping), other compactions
// are busy, input waits, and the meter drops.
func TestCompactOp(t *testing.T) {
	t.Parallel()
	g := newGatedCompaction()
	e := newEnv(t, envOptions{script: g.script()})
	t.Cleanup(g.open)
	id := e.session(client.NewSession{})
	cn := e.dial(e.alice)
	sub := subscribe(t, cn, id, -1)
	if sub.Context.Window != 100_000 || sub.Context.Tokens != 0 {
		t.Errorf("subscribe meter %+v, want 0 of the route's 100000", sub.Context)
	}
	for turn, p := range []string{"first", "second"} {
		if _, err := cn.Followup(t.Context(), id, p); err != nil {
			t.Fatal(err)
		}
		collect(t, sub, turnEnded(turn+1))
	}
	e.waitIdle(id)
	before, err := e.alice.GetSession(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}

	type outcome struct {
		res client.CompactResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := cn.Compact(context.Background(), id)
		done <- outcome{res, err}
	}()
	select {
	case <-g.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the summary request never reached the model")
	}
	// In flight: the same socket still answers, a second compaction is
	// busy, and a message is accepted and waits.
	if err := cn.Ping(t.Context()); err != nil {
		t.Fatalf("ping during a compaction: %v", err)
	}
	other := e.dial(e.alice)
	if _, err := other.Compact(t.Context(), id); client.CodeOf(err) != "busy" {
		t.Errorf("second compaction: %v, want busy", err)
	}
	if _, err := other.Followup(t.Context(), id, "third"); err != nil {
		t.Fatalf("followup during a compaction: %v", err)
	}
	select {
	case o := <-done:
		t.Fatalf("compact answered before its summary: %+v %v", o.res, o.err)
	default:
	}
	g.open()
	o := <-done
	if o.err != nil {
		t.Fatal(o.err)
	}
	if !o.res.Compacted || o.res.Replaced < 2 || o.res.CommandID == "" || !strings.HasPrefix(o.res.Message, "Compacted ") {
		t.Fatalf("result %+v", o.res)
	}
	if o.res.Context.Tokens >= before.Context.Tokens {
		t.Errorf("meter %d after compaction, %d before", o.res.Context.Tokens, before.Context.Tokens)
	}
	// The waiting message runs after the bracket closed.
	collect(t, sub, turnEnded(3))
	var end, third int
	for i, ev := range e.fullLog(id) {
		switch {
		case ev.Type == "compaction/end":
			end = i
		case ev.Type == "turn/start" && end > 0 && third == 0:
			third = i
		}
	}
	if end == 0 || third < end {
		t.Errorf("compaction/end at %d, the next turn at %d: the message did not wait", end, third)
	}
}

// TestCompactOpRefused: viewers and share links may not compact; nothing
// is logged for them.
func TestCompactOpRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{script: newGatedCompaction().script()})
	id := e.session(client.NewSession{})
	if err := e.alice.AddMember(t.Context(), id, "bob", "viewer"); err != nil {
		t.Fatal(err)
	}
	link, err := e.alice.CreateShareLink(t.Context(), id, nil)
	if err != nil {
		t.Fatal(err)
	}
	head := len(e.fullLog(id))
	for _, tt := range []struct {
		name string
		c    *client.Client
		want string
	}{
		{"viewer", e.bob, "forbidden"},
		{"share link", client.New(e.url, client.WithShareToken(link.Token)), "unauthorized"},
	} {
		cn := e.dial(tt.c)
		if _, err := cn.Compact(t.Context(), id); client.CodeOf(err) != tt.want {
			t.Errorf("%s: %v, want %s", tt.name, err, tt.want)
		}
	}
	if n := len(e.fullLog(id)); n != head {
		t.Errorf("refused compactions logged %d events", n-head)
	}
}
