package driver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"harness/internal/driver"
	"harness/internal/driverstore"
	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/llm/openai"
	"harness/internal/models"
	"harness/internal/session"
	"harness/internal/tools"
)

// harness is one agent on real parts: a SQLite store in a temp dir, the
// batched writer, the real go-openai adapter against the scripted fake model
// server over loopback HTTP, the built-in tools in a temp workspace, and a
// manager that verifies every request against the log.
type harness struct {
	t      testing.TB
	ctx    context.Context
	fake   *fake.Server
	store  *models.Store
	mgr    *driver.Manager
	agent  *driver.Agent
	ws     string
	dir    string
	live   *liveRecorder
	route  [2]string // provider, model of new sessions
	closed bool
	logger *slog.Logger
	mopts  driver.Options
}

type harnessOpt func(*harnessConfig)

type harnessConfig struct {
	maxParallel int
	retry       llm.RetryPolicy
	managerOpts func(*driver.Options)
	noAgent     bool
	provider    llm.Provider // when set, sessions use it instead of the fake server
}

// withProvider makes sessions use p (an in-process provider).
func withProvider(p llm.Provider) harnessOpt { return func(c *harnessConfig) { c.provider = p } }

// withManager adjusts the manager options.
func withManager(fn func(*driver.Options)) harnessOpt {
	return func(c *harnessConfig) { c.managerOpts = fn }
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
	ctx := t.Context()
	dir := t.TempDir()
	logger := slog.New(slog.DiscardHandler)
	if os.Getenv("HARNESS_TEST_LOG") != "" {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	db, err := models.Open(ctx, logger, models.Config{Driver: models.DriverSQLite, DSN: filepath.Join(dir, "h.db")})
	if err != nil {
		t.Fatal(err)
	}
	w := models.NewWriter(logger, db, models.WriterOptions{})
	st := models.NewStore(logger, db, w)

	srv := fake.NewServer(script)
	url := srv.Start(t)
	prov, err := openai.New(openai.Config{
		Name: "fake", Label: "Fake", Kind: openai.KindDeepSeek, BaseURL: url, APIKey: "sk-test-secret",
		DefaultModel: "fake-model", Thinking: true,
		Models: []llm.ModelInfo{{ID: "fake-model", Label: "Fake", ContextWindow: 100_000, DefaultMaxTokens: 4096,
			Efforts: []llm.Effort{llm.EffortOff, llm.EffortHigh}, DefaultEffort: llm.EffortHigh}},
		Retry: cfg.retry, IdleTimeout: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	reg := llm.NewRegistry()
	if err := reg.Register(prov); err != nil {
		t.Fatal(err)
	}
	reg.SetDefault("fake", "fake-model")
	route := [2]string{"fake", "fake-model"}
	if cfg.provider != nil {
		if err := reg.Register(cfg.provider); err != nil {
			t.Fatal(err)
		}
		info := cfg.provider.Info()
		route = [2]string{info.Name, info.DefaultModel}
	}
	treg := tools.NewRegistry()
	if err := tools.RegisterBuiltins(treg, tools.BuiltinOptions{}); err != nil {
		t.Fatal(err)
	}
	mopts := driver.Options{Providers: reg, Tools: treg, VerifyRequests: true, MaxParallelTools: cfg.maxParallel}
	if cfg.managerOpts != nil {
		cfg.managerOpts(&mopts)
	}
	mgr := driver.NewManager(logger, driverstore.Store{S: st}, mopts)
	h := &harness{t: t, ctx: ctx, fake: srv, store: st, mgr: mgr, dir: dir, ws: filepath.Join(dir, "ws"), live: &liveRecorder{}, route: route, logger: logger, mopts: mopts}
	if err := os.MkdirAll(h.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	cancelLive := mgr.SubscribeLive(h.live.record)
	t.Cleanup(func() {
		cancelLive()
		h.shutdown()
		_ = w.Close(context.Background())
		_ = db.Close()
	})
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
	h.shutdown()
	h.closed = false
	h.mgr = driver.NewManager(h.logger, driverstore.Store{S: h.store}, h.mopts)
	h.mgr.SubscribeLive(h.live.record)
	h.agent = nil
}

func (h *harness) shutdown() {
	if h.closed {
		return
	}
	h.closed = true
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.mgr.Shutdown(ctx); err != nil {
		h.t.Errorf("shutdown: %v", err)
	}
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
	events := a.Log().Events(0, a.Log().Len())
	if err := session.CheckInvariants(events); err != nil {
		h.t.Fatalf("invariants: %v\n%s", err, h.dump())
	}
	if err := h.store.W.Flush(h.ctx, a.ID()); err != nil {
		h.t.Fatalf("flush: %v", err)
	}
	stored, err := h.store.EventsSince(h.ctx, a.ID(), -1, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	if len(stored) != len(events) {
		h.t.Fatalf("store has %d events, log %d", len(stored), len(events))
	}
	for i := range events {
		x, _ := session.MarshalEvent(events[i])
		y, _ := session.MarshalEvent(stored[i])
		if string(x) != string(y) {
			h.t.Fatalf("stored event %d differs:\n%s\n%s", i, x, y)
		}
	}
}

func (h *harness) events() []session.Event {
	return h.agent.Log().Events(0, h.agent.Log().Len())
}

// types lists the event types, dropping assistant/chunk runs to one entry
// "assistant/chunk*" so sequences read like the spec.
func (h *harness) types() []string {
	return typesOf(h.events())
}

func typesOf(events []session.Event) []string {
	var out []string
	for _, ev := range events {
		t := string(ev.Type)
		if ev.Type == session.TypeAssistantChunk {
			if len(out) > 0 && out[len(out)-1] == "assistant/chunk*" {
				continue
			}
			t = "assistant/chunk*"
		}
		out = append(out, t)
	}
	return out
}

func (h *harness) dump() string {
	var sb strings.Builder
	for _, ev := range h.events() {
		if ev.Type == session.TypeAssistantChunk {
			continue
		}
		d := string(ev.Data)
		if len(d) > 300 {
			d = d[:300] + "…"
		}
		fmt.Fprintf(&sb, "%4d %-22s %s\n", ev.Seq, ev.Type, d)
	}
	return sb.String()
}

// find returns the decoded data of every event of type t.
func find[T any](h *harness, t session.Type) []T {
	h.t.Helper()
	var out []T
	for _, ev := range h.events() {
		if ev.Type == t {
			v, err := session.Decode[T](ev)
			if err != nil {
				h.t.Fatal(err)
			}
			out = append(out, v)
		}
	}
	return out
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
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, ev := range h.events() {
			if ok(ev) {
				return ev
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	h.t.Fatalf("timed out waiting for an event\n%s", h.dump())
	return session.Event{}
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
