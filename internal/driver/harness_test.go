package driver_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"harness/internal/driver"
	"harness/internal/driverstore"
	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/models"
	"harness/internal/session"
	"harness/internal/testkit"
	"harness/internal/testkit/poll"
)

// harness is one agent on real parts (testkit.Stack): a SQLite store in a
// temp dir, the batched writer, the real go-openai adapter against the
// scripted fake model server over loopback HTTP, the built-in tools in a
// temp workspace, and a manager that verifies every request against the
// log.
type harness struct {
	t     testing.TB
	ctx   context.Context
	stack *testkit.Stack
	fake  *fake.Server
	store *models.Store
	mgr   *driver.Manager // the stack's, again after restart
	agent *driver.Agent
	ws    string
	dir   string
	live  *liveRecorder
	route [2]string // provider, model of new sessions
}

type harnessOpt func(*harnessConfig)

type harnessConfig struct {
	maxParallel int
	retry       llm.RetryPolicy
	managerOpts func(*driver.Options)
	noAgent     bool
	provider    llm.Provider // when set, sessions use it instead of the fake server
	store       func(driver.Store) driver.Store
}

// withProvider makes sessions use p (an in-process provider).
func withProvider(p llm.Provider) harnessOpt { return func(c *harnessConfig) { c.provider = p } }

// withManager adjusts the manager options.
func withManager(fn func(*driver.Options)) harnessOpt {
	return func(c *harnessConfig) { c.managerOpts = fn }
}

// withStore wraps the manager's store (the real one) in another.
func withStore(wrap func(driver.Store) driver.Store) harnessOpt {
	return func(c *harnessConfig) { c.store = wrap }
}

func withMaxParallel(n int) harnessOpt { return func(c *harnessConfig) { c.maxParallel = n } }
func withRetry(p llm.RetryPolicy) harnessOpt {
	return func(c *harnessConfig) { c.retry = p }
}

func fastRetry() llm.RetryPolicy {
	p := llm.DefaultRetryPolicy()
	p.InitialDelay, p.MaxDelay = time.Millisecond, 5*time.Millisecond
	return p
}

func newHarness(t testing.TB, script fake.Script, opts ...harnessOpt) *harness {
	t.Helper()
	cfg := harnessConfig{retry: fastRetry()}
	for _, o := range opts {
		o(&cfg)
	}
	so := testkit.StackOptions{
		Script: &script,
		Route: testkit.RouteOptions{
			APIKey: "sk-test-secret", MaxTokens: 4096, Efforts: true, Thinking: true,
			Retry: cfg.retry, IdleTimeout: 10 * time.Second,
		},
		// Driver tests choose their workspace directory freely.
		Plain:          true,
		VerifyRequests: true,
		Manager: func(o *driver.Options) {
			o.MaxParallelTools = cfg.maxParallel
			if cfg.managerOpts != nil {
				cfg.managerOpts(o)
			}
		},
		Store: cfg.store,
	}
	if cfg.provider != nil {
		so.Providers = []llm.Provider{cfg.provider}
	}
	st := testkit.NewStack(t, so)
	route := [2]string{"fake", "fake-model"}
	if cfg.provider != nil {
		info := cfg.provider.Info()
		route = [2]string{info.Name, info.DefaultModel}
	}
	h := &harness{t: t, ctx: t.Context(), stack: st, fake: st.Fake, store: st.Store, mgr: st.Manager,
		dir: st.Dir, ws: st.PlainWorkspace(), live: &liveRecorder{}, route: route}
	// The stack's cleanup, registered earlier, shuts the manager down after
	// this one ends the subscription.
	cancelLive := st.Manager.SubscribeLive(h.live.record)
	t.Cleanup(cancelLive)
	if !cfg.noAgent {
		h.agent = h.newSession("s1")
	}
	return h
}

// newSessionRow stores a session row.
func (h *harness) newSessionRow(id string) *models.Session {
	h.t.Helper()
	row := &models.Session{ID: id, OwnerID: "u1", Workspace: h.ws, Provider: h.route[0], Model: h.route[1]}
	if err := h.store.CreateSession(h.ctx, row); err != nil {
		h.t.Fatal(err)
	}
	return row
}

// newSession stores a session row and starts its agent.
func (h *harness) newSession(id string) *driver.Agent {
	h.t.Helper()
	row := h.newSessionRow(id)
	a, err := h.mgr.Create(h.ctx, driverstore.MetaOf(row))
	if err != nil {
		h.t.Fatal(err)
	}
	return a
}

// restart shuts the manager down gracefully and starts a new one on the
// same store, as a server restart does; the agent is loaded again lazily.
func (h *harness) restart() {
	h.t.Helper()
	h.stack.Restart()
	h.mgr = h.stack.Manager
	h.mgr.SubscribeLive(h.live.record)
	h.agent = nil
}

func userMsg(text string) llm.Message {
	return llm.UserText(text, llm.Source{Kind: llm.SourceUser, UserID: "u1", Name: "Ada"})
}

// followup sends a prompt and returns its message.
func (h *harness) followup(text string) llm.Message {
	h.t.Helper()
	m := userMsg(text)
	if err := h.agent.Followup(h.ctx, m); err != nil {
		h.t.Fatalf("followup: %v", err)
	}
	return m
}

// idle waits for the agent to go idle, then checks the log's invariants and
// that the store holds exactly the in-memory log.
func (h *harness) idle() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(h.ctx, 20*time.Second)
	defer cancel()
	if err := h.agent.Wait(ctx); err != nil {
		h.t.Fatalf("agent did not go idle: %v\n%s", err, h.dump())
	}
	h.check(h.agent)
}

// check asserts the relational invariants and that the stored log equals
// the in-memory log byte for byte.
func (h *harness) check(a *driver.Agent) {
	h.t.Helper()
	testkit.CheckLog(h.t, h.store, a.Log(), a.ID())
}

func (h *harness) events() []session.Event {
	return h.agent.Log().Events(0, h.agent.Log().Len())
}

// types lists the event types, chunk runs folded (testkit.Types).
func (h *harness) types() []string {
	return testkit.Types(h.events())
}

func (h *harness) dump() string {
	return testkit.Dump(h.events())
}

// find returns the decoded data of every event of type t.
func find[T any](h *harness, t session.Type) []T {
	h.t.Helper()
	return testkit.Find[T](h.t, h.events(), t)
}

func (h *harness) turnEnds() []session.TurnEndReason {
	var out []session.TurnEndReason
	for _, te := range find[session.TurnEnd](h, session.TypeTurnEnd) {
		out = append(out, te.Reason)
	}
	return out
}

func (h *harness) lastTurnEnd() session.TurnEndReason {
	h.t.Helper()
	ends := h.turnEnds()
	if len(ends) == 0 {
		h.t.Fatalf("no turn/end\n%s", h.dump())
	}
	return ends[len(ends)-1]
}

// waitEvent blocks until an event satisfying ok is in the log.
func (h *harness) waitEvent(ok func(session.Event) bool) session.Event {
	h.t.Helper()
	var found session.Event
	if !poll.Wait(h.t, func() bool {
		for _, ev := range h.events() {
			if ok(ev) {
				found = ev
				return true
			}
		}
		return false
	}, poll.Every(2*time.Millisecond)) {
		h.t.Fatalf("timed out waiting for an event\n%s", h.dump())
	}
	return found
}

func isType(t session.Type) func(session.Event) bool {
	return func(ev session.Event) bool { return ev.Type == t }
}

// derivedRoles summarises DeriveMessages as role:kind entries.
func derivedRoles(msgs []llm.Message) []string {
	var out []string
	for _, m := range msgs {
		kind := "text"
		switch {
		case m.Source.Kind == llm.SourceTool:
			kind = "result"
		case len(m.ToolCalls()) > 0:
			kind = "calls"
		case m.Source.Kind == llm.SourcePlugin:
			kind = m.Source.Plugin
		}
		out = append(out, string(m.Role)+":"+kind)
	}
	return out
}

// liveRecorder keeps the manager's live notifications.
type liveRecorder struct {
	mu     sync.Mutex
	events []driver.LiveEvent
}

func (r *liveRecorder) record(ev driver.LiveEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

func (r *liveRecorder) kinds(k driver.LiveKind) []driver.LiveEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []driver.LiveEvent
	for _, ev := range r.events {
		if ev.Kind == k {
			out = append(out, ev)
		}
	}
	return out
}

func (r *liveRecorder) statuses() []driver.Status {
	var out []driver.Status
	for _, ev := range r.kinds(driver.LiveStatus) {
		out = append(out, ev.Status)
	}
	return out
}

func textReply(text string) fake.Reply { return fake.Reply{Reasoning: "thinking", Text: text} }

func toolReply(calls ...fake.ToolCall) fake.Reply { return fake.Reply{ToolCalls: calls} }

func call(id, name string, args any) fake.ToolCall {
	b, _ := json.Marshal(args)
	return fake.ToolCall{ID: id, Name: name, Arguments: string(b), Fragments: 3}
}

func script(replies ...fake.Reply) fake.Script { return fake.Script{Replies: replies} }

func equal(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s:\n got  %v\n want %v", what, got, want)
	}
}

func fileExists(dir, name string) bool {
	_, err := os.Stat(filepath.Join(dir, name))
	return err == nil
}
