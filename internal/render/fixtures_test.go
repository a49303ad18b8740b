package render_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"harness/internal/compact"
	"harness/internal/driver"
	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/models"
	"harness/internal/session"
	"harness/internal/testkit"
	"harness/internal/testkit/poll"
)

// -update-fixtures records testdata/sessions/*.jsonl again from real runs:
// the driver, the built-in tools and the offline demo model (or a scripted
// fake model) over loopback HTTP. The golden files then need -update.
var updateFixtures = flag.Bool("update-fixtures", false, "record the session fixtures again")

// recorder runs one real agent on the test stack (testkit.Stack) with p as
// its model route.
type recorder struct {
	t     *testing.T
	ctx   context.Context
	mgr   *driver.Manager
	agent *driver.Agent
}

// newRecorder starts the agent; o may ask for more (compaction), its model
// route and workspace rules are the recorder's.
func newRecorder(t *testing.T, p llm.Provider, o testkit.StackOptions) *recorder {
	t.Helper()
	o.Log = slog.New(slog.DiscardHandler)
	o.Providers = []llm.Provider{p}
	o.Plain = true
	st := testkit.NewStack(t, o)
	ag := st.CreateAgent(&models.Session{ID: "fixture", OwnerID: "u-ada", Workspace: st.PlainWorkspace()})
	return &recorder{t: t, ctx: t.Context(), mgr: st.Manager, agent: ag}
}

// answerAll approves every approval and answers every question with the
// first option.
func (r *recorder) answerAll() {
	cancel := r.mgr.SubscribeLive(func(ev driver.LiveEvent) {
		if ev.Kind != driver.LiveInteractionRequested || ev.Interaction == nil {
			return
		}
		in := *ev.Interaction
		by := &session.Actor{UserID: "u-bob", Name: "Bob"}
		go func() {
			if in.Kind == driver.KindApproval {
				_ = r.agent.Approve(r.ctx, in.ID, !strings.Contains(in.Arguments, "deny"), by)
				return
			}
			answers := make([]session.Answer, 0, len(in.Questions))
			for _, q := range in.Questions {
				answers = append(answers, session.Answer{ID: q.ID, Selected: []string{q.Options[0].Label}})
			}
			_ = r.agent.Answer(r.ctx, in.ID, answers, by)
		}()
	})
	r.t.Cleanup(cancel)
}

func (r *recorder) send(from, text string) {
	r.t.Helper()
	src := llm.Source{Kind: llm.SourceUser, UserID: "u-ada", Name: "Ada"}
	if from == "bob" {
		src = llm.Source{Kind: llm.SourceUser, UserID: "u-bob", Name: "Bob"}
	}
	if err := r.agent.Followup(r.ctx, llm.UserText(text, src)); err != nil {
		r.t.Fatal(err)
	}
	r.idle()
}

// idle waits for the turn to end. A send opens its turn before it returns
// (and a cancel leaves the agent busy until the turn has ended), so Wait
// cannot return early.
func (r *recorder) idle() {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(r.ctx, 30*time.Second)
	defer cancel()
	if err := r.agent.Wait(ctx); err != nil {
		l := r.agent.Log()
		for _, ev := range l.Events(max(0, l.Len()-15), l.Len()) {
			b, _ := session.MarshalEvent(ev)
			r.t.Log(string(b))
		}
		r.t.Fatal(err)
	}
}

func (r *recorder) save(name string) {
	r.t.Helper()
	var buf bytes.Buffer
	l := r.agent.Log()
	for _, ev := range l.Events(0, l.Len()) {
		if ev.Type == session.TypeRequestHeader {
			// The system prompt and tool schemas are large and irrelevant
			// here; the config stays so the log still loads.
			rh, err := session.Decode[session.RequestHeader](ev)
			if err != nil {
				r.t.Fatal(err)
			}
			rh.Header.System, rh.Header.Tools = "", nil
			if ev.Data, err = json.Marshal(rh); err != nil {
				r.t.Fatal(err)
			}
		}
		b, err := session.MarshalEvent(ev)
		if err != nil {
			r.t.Fatal(err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	if err := os.WriteFile(filepath.Join("testdata", "sessions", name+".jsonl"), buf.Bytes(), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func TestRecordFixtures(t *testing.T) {
	if !*updateFixtures {
		t.Skip("records fixtures only with -update-fixtures")
	}
	t.Run("demo-tools", func(t *testing.T) {
		p, stop, err := fake.StartDemo(t.Context(), nil, fake.WithChunkDelay(0))
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		r := newRecorder(t, p, testkit.StackOptions{})
		r.answerAll()
		for _, prompt := range []string{
			"hello <b>bold</b> <script>alert(1)</script>",
			"run: echo hi; echo oops >&2; exit 3",
			"write: notes.txt\nline one\nline two",
			"read: notes.txt",
			"ask: proceed?",
			"todo: plan; build; test",
		} {
			r.send("ada", prompt)
		}
		r.send("bob", "run: echo from bob")
		r.save("demo-tools")
	})
	t.Run("failures", func(t *testing.T) {
		script := fake.Script{Replies: []fake.Reply{
			{Error: &fake.HTTPError{Status: 429, Message: "Rate limit reached"}},
			{Reasoning: "Let me answer in Go.", Text: "Here is code:\n\n```go\nfunc main() {\n\tfmt.Println(\"<hi>\")\n}\n```\n\n| a | b |\n|---|--:|\n| 1 | 2 |\n\nSee [docs](https://go.dev) and [bad](javascript:alert(1))."},
			{Error: &fake.HTTPError{Status: 401, Message: "Incorrect API key provided: sk-live-abcdef0123456789. You can find your key at https://example.com"}},
			{Text: "This will be cut short by the user.", Chunks: 8, Fault: &fake.Fault{Kind: fake.FaultStall, After: 4}},
			{Text: "max", Finish: "length"},
		}}
		retry := llm.DefaultRetryPolicy()
		retry.InitialDelay, retry.MaxDelay = 5*time.Millisecond, 20*time.Millisecond
		_, p := testkit.FakeRoute(t, script, testkit.RouteOptions{Thinking: true, Retry: retry})
		r := newRecorder(t, p, testkit.StackOptions{})
		r.send("ada", "show me code")
		r.send("ada", "this fails")
		from := r.agent.Log().Len()
		if err := r.agent.Followup(r.ctx, llm.UserText("stop me", llm.Source{Kind: llm.SourceUser, UserID: "u-ada", Name: "Ada"})); err != nil {
			t.Fatal(err)
		}
		poll.Eventually(t, "four text chunks before the stall", func() bool { return countChunks(r.agent.Log(), from, llm.ChunkTextDelta) >= 4 })
		r.agent.Cancel(session.CancelCause{Kind: session.CauseUser, UserID: "u-ada"}, true)
		r.idle()
		r.send("ada", "hit the limit")
		r.save("failures")
	})
	t.Run("compaction", recordCompaction)
	t.Run("subagent", func(t *testing.T) {
		p, stop, err := fake.StartDemo(t.Context(), nil, fake.WithChunkDelay(0))
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		r := newRecorder(t, p, testkit.StackOptions{Subagents: true})
		r.answerAll()
		r.send("ada", "write: notes.txt\nline one\nline two")
		r.send("ada", `call: task {"description": "Read the notes", "prompt": "read: notes.txt"}`)
		var child string
		for _, ev := range r.agent.Log().Events(0, r.agent.Log().Len()) {
			if ev.Type == session.TypeSubagentStarted {
				st, err := session.Decode[session.SubagentStarted](ev)
				if err != nil {
					t.Fatal(err)
				}
				child = st.Session
			}
		}
		c, ok := r.mgr.Lookup(child)
		if !ok {
			t.Fatal("no child agent")
		}
		r.save("subagent")
		(&recorder{t: t, ctx: r.ctx, mgr: r.mgr, agent: c}).save("subagent-child")
	})
}

// recordCompaction records a session on a small context window: pressure
// compaction inside a turn, then a manual compaction between turns.
func recordCompaction(t *testing.T) {
	_, p := testkit.FakeRoute(t, fake.Script{Responder: compactionResponder}, testkit.RouteOptions{Window: 6_000})
	r := newRecorder(t, p, testkit.StackOptions{Compaction: &compact.Options{}})
	for i, prompt := range []string{
		"Goal: write a tiny calculator in Go. Start with the parser.",
		"Now the evaluator.",
		"Add error handling.",
		"Add tests.",
		"Summarize what we have.",
	} {
		r.send("ada", prompt)
		if i == 3 && compactions(r.agent.Log()) != 0 {
			t.Fatal("compacted before the window filled")
		}
	}
	if compactions(r.agent.Log()) != 1 {
		t.Fatalf("%d compactions, want one from context pressure", compactions(r.agent.Log()))
	}
	res, err := compact.Compact(r.ctx, r.agent, compact.Options{Providers: r.mgr.Providers(), CommandID: "cmd-1"})
	if err != nil || !res.Compacted {
		t.Fatalf("manual compaction: %+v, %v", res, err)
	}
	r.send("ada", "Go on with the README.")
	r.save("compaction")
}

// compactionResponder answers summary requests with an eight-section
// checkpoint and everything else with a long answer.
func compactionResponder(rec fake.Recorded) fake.Reply {
	if rec.Header.Get("X-Harness-Purpose") == string(llm.PurposeCompaction) {
		return fake.Reply{Text: "## Primary Request and Intent\n- Write a tiny calculator in Go <script>alert(1)</script>.\n\n" +
			"## Key Technical Concepts\n- Recursive descent, `float64`.\n\n## Files and Code\n- `calc.go`: parser and evaluator.\n\n" +
			"## Errors and Fixes\n- (none)\n\n## Pending Jobs\n- Tests.\n\n## Current Work\n- Error handling.\n\n" +
			"## Next Step\n- Write the tests.\n\n## Critical Context\n- Keep it in one file."}
	}
	return fake.Reply{Text: "Here is the next part.\n\n" + strings.Repeat("The calculator parses numbers and operators carefully. ", 45) +
		"\n\n```go\nfunc eval(s string) (float64, error) { return 0, nil }\n```", Chunks: 6}
}

func compactions(l *session.Log) int {
	n := 0
	for _, ev := range l.Events(0, l.Len()) {
		if ev.Type == session.TypeCompactionSum {
			n++
		}
	}
	return n
}

func countChunks(l *session.Log, from int64, typ llm.ChunkType) int {
	n := 0
	for _, ev := range l.Events(from, l.Len()) {
		if ev.Type != session.TypeAssistantChunk {
			continue
		}
		c, err := session.Decode[session.AssistantChunk](ev)
		if err == nil && c.Chunk.Type == typ {
			n++
		}
	}
	return n
}

// loadFixture reads testdata/sessions/<name>.jsonl.
func loadFixture(t testing.TB, name string) []session.Event {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "sessions", name+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []session.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		ev, err := session.UnmarshalEvent(sc.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
