package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"harness/client"
	"harness/internal/session"
	"harness/internal/testkit/poll"
)

// SIGKILL the server while 20 sessions stream and run tools, then restart
// it: every message the server acknowledged is in its log, every session
// loads, each interrupted turn is closed exactly once, the queued messages
// run, and a viewer reconnecting with since sees a gap-free log.
//
// On SQLite and on PostgreSQL. On PostgreSQL the new server starts at once,
// while the killed one's leases are still held: it takes every session
// over once they lapse.
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("crash recovery spawns servers; skipped with -short")
	}
	t.Parallel()
	forEachBackend(t, testCrashRecovery)
}

func testCrashRecovery(t *testing.T, b backend) {
	dir := t.TempDir()
	token := b.token(t, dir)
	srv := startServer(t, dir, b.serverEnv()...)
	ctx := context.Background()
	c := client.New(srv.URL, client.WithToken(token))

	const sessions = 20
	ids := make([]string, sessions)
	var (
		mu    sync.Mutex
		acked = map[string][]string{} // session -> acknowledged message ids
	)
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Go(func() {
			s, err := c.CreateSession(ctx, client.NewSession{Title: fmt.Sprint("crash ", i), Mode: "auto"})
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = s.ID
			prompt := "long: 5000" // streaming for ~20 s
			if i%2 == 1 {
				prompt = "run: echo started; sleep 30" // a tool running
			}
			for _, p := range []string{prompt, "queued after the crash " + fmt.Sprint(i)} {
				id, err := c.SendMessage(ctx, s.ID, p, "followup")
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				acked[s.ID] = append(acked[s.ID], id)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	// A viewer follows one session and remembers how far it got.
	cn, err := c.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := cn.Subscribe(ctx, ids[0], -1)
	if err != nil {
		t.Fatal(err)
	}
	var seen int64 = -1
	go func() {
		for p := range sub.C {
			if p.Event != nil {
				mu.Lock()
				seen = p.Event.Seq
				mu.Unlock()
			}
		}
	}()

	// Crash when every session is busy: streaming or inside its tool.
	poll.Eventually(t, "every session busy", func() bool {
		for i, id := range ids {
			want := "assistant/chunk"
			if i%2 == 1 {
				want = "tool/output"
			}
			if !slices.ContainsFunc(events(t, c, id), func(e client.Event) bool { return e.Type == want }) {
				return false
			}
		}
		return true
	}, poll.Within(30*time.Second))
	srv.kill()
	_ = cn.Close()

	srv = startServer(t, dir, b.serverEnv()...)
	c = client.New(srv.URL, client.WithToken(token))
	for i, id := range ids {
		// The queued message runs after the restart.
		poll.Eventually(t, "the queued message to run in "+id, func() bool {
			evs := events(t, c, id)
			return countTurnEnds(evs, "completed") >= 1 && hasUserMessage(evs, acked[id][1])
		}, poll.Within(30*time.Second))
		evs := events(t, c, id)
		log := toSession(t, evs)
		if err := session.CheckInvariants(log); err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
		for _, m := range acked[id] {
			if !inInbox(evs, m) {
				t.Fatalf("session %d lost acknowledged message %s", i, m)
			}
		}
		if n := countTurnEnds(evs, "interrupted"); n != 1 {
			t.Fatalf("session %d: %d interrupted turn ends, want exactly 1", i, n)
		}
		if i%2 == 1 && !slices.ContainsFunc(log, func(e session.Event) bool {
			tr, err := session.Decode[session.ToolResult](e)
			return e.Type == session.TypeToolResult && err == nil && tr.Error != nil && tr.Error.Code == session.CodeToolOutcomeUnknown
		}) {
			t.Fatalf("session %d: the running tool call was not closed as outcome unknown", i)
		}
	}

	// The viewer reconnects with since and gets exactly the rest.
	mu.Lock()
	since := seen
	mu.Unlock()
	t.Logf("after the crash: session 0 has %d events, session 1 %d; the viewer had seen seq %d",
		len(events(t, c, ids[0])), len(events(t, c, ids[1])), since)
	cn, err = c.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cn.Close()
	sub, err = cn.Subscribe(ctx, ids[0], since)
	if err != nil {
		t.Fatal(err)
	}
	next := since + 1
	for p := range sub.C {
		if p.Ch == client.ChReplayDone {
			if *p.Head != next-1 {
				t.Fatalf("replay ended at %d, head %d", next-1, *p.Head)
			}
			break
		}
		if p.Event != nil {
			if p.Event.Seq != next {
				t.Fatalf("viewer got seq %d, want %d", p.Event.Seq, next)
			}
			next++
		}
	}
	if want := events(t, c, ids[0]); int64(len(want)) < next {
		t.Fatalf("replay went past the stored log")
	}
}

func toSession(t *testing.T, evs []client.Event) []session.Event {
	t.Helper()
	out := make([]session.Event, len(evs))
	for i, e := range evs {
		b, _ := json.Marshal(e)
		ev, err := session.UnmarshalEvent(b)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = ev
	}
	return out
}

// countTurnEnds counts turn/end events with reason kind ("" = any).
func countTurnEnds(evs []client.Event, kind string) int {
	n := 0
	for _, e := range evs {
		if e.Type == "turn/end" && (kind == "" || strings.Contains(string(e.Data), `"kind":"`+kind+`"`)) {
			n++
		}
	}
	return n
}

func hasUserMessage(evs []client.Event, id string) bool {
	return slices.ContainsFunc(evs, func(e client.Event) bool {
		return e.Type == "user/message" && strings.Contains(string(e.Data), `"id":"`+id+`"`)
	})
}

func inInbox(evs []client.Event, id string) bool {
	return slices.ContainsFunc(evs, func(e client.Event) bool {
		return e.Type == "agent/inbox/spliced" && strings.Contains(string(e.Data), `"id":"`+id+`"`)
	})
}
