package ws_test

import (
	"encoding/json"
	"testing"
	"time"

	"harness/client"
	"harness/internal/app"
	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/testkit"
	"harness/internal/testkit/apptest"
	"harness/internal/ws"
)

// env is the real server built by internal/app on loopback: SQLite in a
// temp dir, the scripted fake model server as the default provider ("fake")
// and the offline demo model ("demo").
type env struct {
	t    *testing.T
	app  *apptest.App
	url  string
	fake *fake.Server
	// alice owns the sessions tests create; bob is another user.
	alice, bob     *client.Client
	aliceID, bobID string
}

type envOptions struct {
	script    fake.Script
	ws        ws.Options
	demoDelay time.Duration // demo pause between deltas (default 2 ms)
	// projections replaces the transcript's projections.
	projections ws.Projections
}

func newEnv(t *testing.T, o envOptions) *env {
	t.Helper()
	fs, prov := testkit.FakeRoute(t, o.script, testkit.RouteOptions{
		MaxTokens: 4096, Thinking: true, Retry: llm.RetryPolicy{MaxRetries: 0}, IdleTimeout: 30 * time.Second,
	})
	delay := o.demoDelay
	if delay == 0 {
		delay = 2 * time.Millisecond
	}
	a := apptest.StartApp(t, nil, app.Options{
		Providers:      []llm.Provider{prov},
		DemoOptions:    []fake.Option{fake.WithChunkDelay(max(delay, 0))},
		VerifyRequests: true,
		WS:             o.ws,
		Projections:    o.projections,
	})
	e := &env{t: t, app: a, url: a.URL, fake: fs}
	e.alice, e.aliceID = e.user("alice", false)
	e.bob, e.bobID = e.user("bob", false)
	return e
}

// user creates an account and returns a token client for it.
func (e *env) user(name string, admin bool) (*client.Client, string) {
	e.t.Helper()
	u := e.app.User(e.t, name, admin)
	return u.Client, u.ID
}

// session creates a session owned by alice.
func (e *env) session(opts client.NewSession) string {
	e.t.Helper()
	s, err := e.alice.CreateSession(e.t.Context(), opts)
	if err != nil {
		e.t.Fatal(err)
	}
	return s.ID
}

func (e *env) dial(c *client.Client) *client.Conn {
	e.t.Helper()
	cn, err := c.Dial(e.t.Context())
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = cn.Close() })
	return cn
}

func subscribe(t *testing.T, cn *client.Conn, id string, since int64) *client.Subscription {
	t.Helper()
	sub, err := cn.Subscribe(t.Context(), id, since)
	if err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	return sub
}

// waitIdle waits for the session's agent to go idle.
func (e *env) waitIdle(id string) {
	e.t.Helper()
	e.app.WaitIdle(e.t, id)
}

// fullLog reads the whole log over REST.
func (e *env) fullLog(id string) []client.Event {
	e.t.Helper()
	var out []client.Event
	since := int64(-1)
	for {
		p, err := e.alice.Events(e.t.Context(), id, since, 5000)
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, p.Events...)
		if len(p.Events) == 0 || out[len(out)-1].Seq >= p.Head {
			return out
		}
		since = out[len(out)-1].Seq
	}
}

// collect reads pushes until stop returns true (that push included) or the
// subscription ends or a timeout passes.
func collect(t *testing.T, sub *client.Subscription, stop func(client.Push) bool) []client.Push {
	t.Helper()
	var out []client.Push
	timeout := time.After(30 * time.Second)
	for {
		select {
		case p, ok := <-sub.C:
			if !ok {
				return out
			}
			out = append(out, p)
			if stop(p) {
				return out
			}
		case <-timeout:
			t.Fatalf("timed out after %d pushes", len(out))
		}
	}
}

// turnEnded is a stop condition: the turn/end of turn n.
func turnEnded(n int) func(client.Push) bool {
	return func(p client.Push) bool {
		if p.Ch != client.ChEvent || p.Event.Type != "turn/end" {
			return false
		}
		var d struct {
			Turn int `json:"turn"`
		}
		_ = json.Unmarshal(p.Event.Data, &d)
		return d.Turn == n
	}
}

func eventsOf(ps []client.Push) []client.Event {
	var out []client.Event
	for _, p := range ps {
		if p.Ch == client.ChEvent {
			out = append(out, *p.Event)
		}
	}
	return out
}

// sameEvents fails unless got equals want event for event (bytes of data).
func sameEvents(t *testing.T, got, want []client.Event) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d events, want %d (got seqs %v..)", len(got), len(want), seqs(got[:min(len(got), 5)]))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Seq != w.Seq || g.Type != w.Type || string(g.Data) != string(w.Data) || g.Time != w.Time {
			t.Fatalf("event %d differs:\n got  %d %s %s\n want %d %s %s", i, g.Seq, g.Type, g.Data, w.Seq, w.Type, w.Data)
		}
	}
}

func seqs(evs []client.Event) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.Seq
	}
	return out
}

// contiguous fails unless evs are seqs from, from+1, ...
func contiguous(t *testing.T, evs []client.Event, from int64) {
	t.Helper()
	for i, ev := range evs {
		if ev.Seq != from+int64(i) {
			t.Fatalf("event %d has seq %d, want %d", i, ev.Seq, from+int64(i))
		}
	}
}

func decode[T any](t *testing.T, raw json.RawMessage) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return v
}
