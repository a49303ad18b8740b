package compact_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"harness/internal/compact"
	"harness/internal/driver"
	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/llm/openai"
	"harness/internal/models"
	"harness/internal/session"
	"harness/internal/testkit"
	"harness/internal/tools"
)

// harness is one agent on real parts (testkit.Stack): a SQLite store in a
// temp dir with the batched writer, the go-openai adapter against the
// scripted fake model server over loopback HTTP, a manager that verifies
// every request against the log, and compaction installed on it. The
// route's context window is small so pressure is reachable with short
// conversations.
type harness struct {
	t     *testing.T
	ctx   context.Context
	stack *testkit.Stack
	fake  *fake.Server
	store *models.Store
	agent *driver.Agent
	reg   *llm.Registry
	// opts are the compaction options installed (meter, logger and
	// registry filled in), for manual compactions and measurements.
	opts compact.Options
	logs *logRecorder

	mu        sync.Mutex
	turns     []fake.Reply // answers to conversation requests, in order
	summaries []fake.Reply // answers to compaction requests, in order
	// onSummary runs when a compaction request arrives (before it is
	// answered), e.g. to send input during a manual compaction.
	onSummary func()
}

type config struct {
	window int64
	opts   compact.Options
	noCtx  bool // drop the runtime-context snapshot (a one-node history)
}

const (
	provider = "fake"
	model    = "fake-model"
)

func newHarness(t *testing.T, cfg config) *harness {
	t.Helper()
	rec := &logRecorder{}
	h := &harness{t: t, ctx: t.Context(), logs: rec}
	retry := llm.DefaultRetryPolicy()
	retry.InitialDelay, retry.MaxDelay = time.Millisecond, 5*time.Millisecond
	h.stack = testkit.NewStack(t, testkit.StackOptions{
		Log:    slog.New(rec),
		Script: &fake.Script{Responder: h.respond},
		Route: testkit.RouteOptions{
			Name: provider, Model: model, Window: cfg.window, MaxTokens: 4096, Efforts: true, Thinking: true,
			Retry: retry, IdleTimeout: 10 * time.Second,
		},
		Fake: []fake.Option{fake.WithChunkDelay(0)},
		// Only the emit tool: the built-ins' schemas would weigh on the
		// small windows the tests count in.
		Tools:          func(r *tools.Registry) { r.MustRegister(emitTool()) },
		Plain:          true,
		VerifyRequests: true,
		Compaction:     &cfg.opts,
	})
	h.fake, h.store, h.reg, h.opts = h.stack.Fake, h.stack.Store, h.stack.Providers, h.stack.Compaction
	h.agent = h.stack.CreateAgent(&models.Session{ID: "s1", OwnerID: "u1", Workspace: t.TempDir(), Provider: provider, Model: model})
	if cfg.noCtx {
		h.agent.Hooks().OnAssemble(noRuntimeContext)
	}
	return h
}

// restart shuts the manager down and starts a new one on the same store, as
// a server restart does; the agent is loaded again (OnLoad runs).
func (h *harness) restart() {
	h.t.Helper()
	h.stack.Restart()
	a, err := h.stack.Manager.Get(h.ctx, "s1")
	if err != nil {
		h.t.Fatal(err)
	}
	h.agent = a
}

func noRuntimeContext(ctx context.Context, a *driver.Assembly, next func(context.Context) (*driver.Assembly, error)) (*driver.Assembly, error) {
	asm, err := next(ctx)
	if asm != nil {
		asm.Contexts = nil
	}
	return asm, err
}

// respond answers conversation and compaction requests from their own queues.
func (h *harness) respond(rec fake.Recorded) fake.Reply {
	h.mu.Lock()
	queue := &h.turns
	hook := func() {}
	if isSummaryRequest(rec) {
		queue = &h.summaries
		if h.onSummary != nil {
			hook = h.onSummary
		}
	}
	if len(*queue) == 0 {
		h.mu.Unlock()
		return fake.Reply{Error: &fake.HTTPError{Status: 500, Message: "test script exhausted"}}
	}
	r := (*queue)[0]
	*queue = (*queue)[1:]
	h.mu.Unlock()
	hook()
	return r
}

func isSummaryRequest(rec fake.Recorded) bool {
	return rec.Header.Get(openai.HeaderPurpose) == string(llm.PurposeCompaction)
}

// script queues conversation replies.
func (h *harness) script(replies ...fake.Reply) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.turns = append(h.turns, replies...)
}

// summarizer queues compaction replies.
func (h *harness) summarizer(replies ...fake.Reply) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.summaries = append(h.summaries, replies...)
}

// requests returns the recorded requests split by purpose.
func (h *harness) requests() (turns, summaries []fake.Recorded) {
	for _, r := range h.fake.Requests() {
		if isSummaryRequest(r) {
			summaries = append(summaries, r)
		} else {
			turns = append(turns, r)
		}
	}
	return turns, summaries
}

// run sends a prompt and waits for the agent to go idle, then checks the
// log's invariants and that the store holds exactly the in-memory log.
func (h *harness) run(text string) {
	h.t.Helper()
	if err := h.agent.Followup(h.ctx, userMsg(text)); err != nil {
		h.t.Fatalf("followup: %v", err)
	}
	h.idle()
}

func (h *harness) idle() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(h.ctx, 20*time.Second)
	defer cancel()
	if err := h.agent.Wait(ctx); err != nil {
		h.t.Fatalf("agent did not go idle: %v\n%s", err, h.dump())
	}
	h.check()
}

// check asserts the log's invariants and that the store holds exactly the
// in-memory log.
func (h *harness) check() {
	h.t.Helper()
	testkit.CheckLog(h.t, h.store, h.log(), "s1")
}

func (h *harness) log() *session.Log { return h.agent.Log() }

func (h *harness) events() []session.Event { return h.log().Events(0, h.log().Len()) }

// measure measures the session with the route's window.
func (h *harness) measure() compact.Measurement {
	return h.opts.Meter.Measure(h.log(), h.opts.Window(h.reg, provider, model))
}

func userMsg(text string) llm.Message {
	return llm.UserText(text, llm.Source{Kind: llm.SourceUser, UserID: "u1", Name: "Ada"})
}

// text is a reply of plain text (no reasoning, no usage: the meter prices
// it with the heuristic, which keeps the tests' arithmetic exact).
func text(s string) fake.Reply { return fake.Reply{Text: s, Chunks: 3, NoUsage: true} }

// emitCall is a reply calling the emit tool for n characters.
func emitCall(id string, n int) fake.Reply {
	return fake.Reply{ToolCalls: []fake.ToolCall{{ID: id, Name: "emit", Arguments: fmt.Sprintf(`{"size":%d}`, n), Fragments: 2}}, NoUsage: true}
}

// overflow is the provider's answer to a request that does not fit.
func overflow() fake.Reply {
	return fake.Reply{Error: &fake.HTTPError{Status: 400, Type: "invalid_request_error",
		Message: "This model's maximum context length is 2000 tokens. However, you requested 2500 tokens. Please reduce the length of the messages."}}
}

// emitTool returns n characters: "HEAD" first, "TAIL" last, numbered filler
// between, so pruning is visible.
func emitTool() tools.Definition {
	return tools.Definition{
		Name:        "emit",
		Description: "Emit text.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"size":{"type":"integer"}},"required":["size"]}`),
		Access:      tools.AccessRead,
		Execute: func(_ context.Context, call *tools.Call) (tools.Result, error) {
			var args struct {
				Size int `json:"size"`
			}
			if err := json.Unmarshal(call.Args, &args); err != nil {
				return tools.Result{}, err
			}
			return tools.TextResult(filler(args.Size)), nil
		},
	}
}

func filler(n int) string {
	var sb strings.Builder
	sb.WriteString("HEAD")
	for i := 0; sb.Len() < n-4; i++ {
		fmt.Fprintf(&sb, " %06d", i)
	}
	s := sb.String()
	if len(s) > n-4 {
		s = s[:n-4]
	}
	return s + "TAIL"
}

func (h *harness) dump() string { return testkit.Dump(h.events()) }

func only[T any](t *testing.T, events []session.Event, typ session.Type) (T, session.Event) {
	t.Helper()
	var found []session.Event
	for _, ev := range events {
		if ev.Type == typ {
			found = append(found, ev)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d %s events, want 1", len(found), typ)
	}
	v, err := session.Decode[T](found[0])
	if err != nil {
		t.Fatal(err)
	}
	return v, found[0]
}

func (h *harness) lastTurnEnd() session.TurnEndReason {
	h.t.Helper()
	ends := testkit.Find[session.TurnEnd](h.t, h.events(), session.TypeTurnEnd)
	if len(ends) == 0 {
		h.t.Fatalf("no turn/end\n%s", h.dump())
	}
	return ends[len(ends)-1].Reason
}

func equal(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s:\n got  %q\n want %q", what, got, want)
	}
}

// logRecorder keeps warnings so tests can assert them.
type logRecorder struct {
	mu      sync.Mutex
	records []string
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	var sb strings.Builder
	sb.WriteString(rec.Level.String() + " " + rec.Message)
	rec.Attrs(func(a slog.Attr) bool {
		sb.WriteString(" " + a.String())
		return true
	})
	if os.Getenv("HARNESS_TEST_LOG") != "" {
		fmt.Fprintln(os.Stderr, sb.String())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, sb.String())
	return nil
}
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *logRecorder) WithGroup(string) slog.Handler      { return r }

func (r *logRecorder) contains(s string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rec := range r.records {
		if strings.Contains(rec, s) {
			return true
		}
	}
	return false
}
