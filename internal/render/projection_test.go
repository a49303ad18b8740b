package render_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"harness/internal/llm"
	"harness/internal/render"
	"harness/internal/session"
)

// run builds a run of events with contiguous seqs, one second apart.
type run struct {
	t   *testing.T
	evs []session.Event
}

func (r *run) add(typ session.Type, data any) *run {
	r.t.Helper()
	b, err := json.Marshal(data)
	if err != nil {
		r.t.Fatal(err)
	}
	seq := int64(len(r.evs))
	r.evs = append(r.evs, session.Event{Seq: seq, Time: 1_000_000 + seq*1000, Type: typ, Data: b})
	return r
}

func (r *run) chunk(turn, step int, c llm.Chunk) *run {
	return r.add(session.TypeAssistantChunk, session.AssistantChunk{Turn: turn, Step: step, Chunk: c})
}

// stream logs one block streamed in two deltas.
func (r *run) stream(turn, step, index int, typ llm.BlockType, text string) *run {
	delta := llm.ChunkTextDelta
	if typ == llm.BlockReasoning {
		delta = llm.ChunkReasoningDelta
	}
	r.chunk(turn, step, llm.Chunk{Type: llm.ChunkBlockStart, Index: index, BlockType: typ})
	r.chunk(turn, step, llm.Chunk{Type: delta, Index: index, Text: text[:len(text)/2]})
	r.chunk(turn, step, llm.Chunk{Type: delta, Index: index, Text: text[len(text)/2:]})
	return r.chunk(turn, step, llm.Chunk{Type: llm.ChunkBlockEnd, Index: index, Block: &llm.ContentBlock{Type: typ, Text: text}})
}

func user(id, text, userID, name string) llm.Message {
	m := llm.UserText(text, llm.Source{Kind: llm.SourceUser, UserID: userID, Name: name})
	m.ID = id
	return m
}

func toolResult(turn int, callID, text string, isError bool, meta any) session.ToolResult {
	r := session.ToolResult{Turn: turn, Step: 1, Message: llm.ToolResultMessage("m-"+callID, callID, []llm.ContentBlock{llm.Text(text)}, isError)}
	if meta != nil {
		r.Meta, _ = json.Marshal(meta)
	}
	return r
}

var by = &session.Actor{UserID: "u-bob", Name: "Bob"}

// projectionCases are runs that between them log every event type the
// live path renders (TestProjectionCoversTheVocabulary checks it).
var projectionCases = []struct {
	name  string
	build func(r *run)
}{
	{"user messages", func(r *run) {
		r.add(session.TypeUserMessage, user("m1", "hello <b>there</b>", "u-ada", "Ada"))
		r.add(session.TypeUserMessage, user("m2", "from bob", "u-bob", "Bob"))
		r.add(session.TypeUserMessage, llm.Message{ID: "m3", Role: llm.RoleUser, Content: []llm.ContentBlock{llm.Text("runtime context")}, Source: llm.Source{Kind: llm.SourcePlugin}})
	}},
	{"streamed answer with usage", func(r *run) {
		r.add(session.TypeTurnStart, session.TurnStart{Turn: 1})
		r.add(session.TypeStepStart, session.StepBoundary{Turn: 1, Step: 1})
		r.stream(1, 1, 0, llm.BlockReasoning, "let me think")
		r.stream(1, 1, 1, llm.BlockText, "**an** answer with `code`")
		r.add(session.TypeAssistantMessage, session.AssistantMessage{Turn: 1, Step: 1,
			Message: llm.Message{ID: "a1", Role: llm.RoleAssistant, Content: []llm.ContentBlock{{Type: llm.BlockReasoning, Text: "let me think"}, llm.Text("**an** answer with `code`")}},
			Usage:   &llm.Usage{InputTokens: 100, OutputTokens: 20, CacheReadTokens: 50}})
		r.add(session.TypeStepStart, session.StepBoundary{Turn: 1, Step: 2})
		r.stream(1, 2, 0, llm.BlockText, "more")
		r.add(session.TypeAssistantMessage, session.AssistantMessage{Turn: 1, Step: 2,
			Message: llm.Message{ID: "a2", Role: llm.RoleAssistant, Content: []llm.ContentBlock{llm.Text("more")}},
			Usage:   &llm.Usage{InputTokens: 10, OutputTokens: 2}})
		r.add(session.TypeTurnEnd, session.TurnEnd{Turn: 1, Reason: session.TurnEndReason{Kind: session.ReasonCompleted}})
	}},
	{"tool call, output, result", func(r *run) {
		r.add(session.TypeTurnStart, session.TurnStart{Turn: 2})
		r.add(session.TypeStepStart, session.StepBoundary{Turn: 2, Step: 1})
		r.chunk(2, 1, llm.Chunk{Type: llm.ChunkBlockStart, Index: 0, BlockType: llm.BlockToolCall, Name: "bash"})
		r.chunk(2, 1, llm.Chunk{Type: llm.ChunkBlockEnd, Index: 0, Block: &llm.ContentBlock{Type: llm.BlockToolCall, ID: "c1", Name: "bash", Arguments: `{"command":"ls"}`}})
		r.add(session.TypeAssistantMessage, session.AssistantMessage{Turn: 2, Step: 1,
			Message: llm.Message{ID: "a3", Role: llm.RoleAssistant, Content: []llm.ContentBlock{llm.ToolCall("c1", "bash", `{"command":"ls"}`), llm.ToolCall("c2", "read", `{"path":"x"}`)}}})
		r.add(session.TypeToolCall, session.ToolCall{Turn: 2, Step: 1, CallID: "c1", Name: "bash", Arguments: `{"command":"ls"}`})
		r.add(session.TypeToolOutput, session.ToolOutput{Turn: 2, Step: 1, CallID: "c1", Stream: "stdout", Text: "a\n"})
		r.add(session.TypeToolOutput, session.ToolOutput{Turn: 2, Step: 1, CallID: "c1", Stream: "stderr", Text: "<b>oops</b>\n"})
		r.add(session.TypeToolResult, toolResult(2, "c1", "a\n", false, map[string]any{"exitCode": 0, "durationMs": 3}))
		r.add(session.TypeToolCall, session.ToolCall{Turn: 2, Step: 1, CallID: "c2", Name: "read", Arguments: `{"path":"x"}`})
		r.add(session.TypeToolResult, toolResult(2, "c2", "no such file", true, nil))
		r.add(session.TypeTurnEnd, session.TurnEnd{Turn: 2, Reason: session.TurnEndReason{Kind: session.ReasonAborted, Cause: &session.CancelCause{Kind: session.CauseUser}}})
	}},
	{"approval and question", func(r *run) {
		r.add(session.TypeTurnStart, session.TurnStart{Turn: 3})
		r.add(session.TypeStepStart, session.StepBoundary{Turn: 3, Step: 1})
		r.add(session.TypeToolCall, session.ToolCall{Turn: 3, Step: 1, CallID: "c3", Name: "bash", Arguments: `{"command":"rm -rf build"}`})
		r.add(session.TypeApprovalAsked, session.ApprovalAsked{ID: "ap1", ToolName: "bash", CallID: "c3", Reason: "needs approval",
			Preview: &session.ApprovalPreview{Kind: session.PreviewCommand, Command: "rm -rf build"}})
		r.add(session.TypeApprovalDecided, session.ApprovalDecided{ID: "ap1", Outcome: session.ApprovalAllowedSession, Tool: "bash", By: by})
		r.add(session.TypeToolResult, toolResult(3, "c3", "", false, nil))
		r.add(session.TypeQuestionAsked, session.QuestionAsked{ID: "q1", CallID: "c4", Questions: []session.Question{{ID: "x", Question: "Go on?", Options: []session.QuestionOption{{Label: "yes"}, {Label: "no"}}}}})
		r.add(session.TypeQuestionAnswered, session.QuestionAnswered{ID: "q1", Outcome: session.QuestionAnsweredOutcome, Answers: []session.Answer{{ID: "x", Selected: []string{"yes"}}}, By: by})
		r.add(session.TypeTodoWrite, session.TodoWrite{Todos: []session.Todo{{Content: "plan", Status: session.TodoPending}}})
		r.add(session.TypeTurnEnd, session.TurnEnd{Turn: 3, Reason: session.TurnEndReason{Kind: session.ReasonMaxTokens}})
	}},
	{"retried step and failed turn", func(r *run) {
		r.add(session.TypeTurnStart, session.TurnStart{Turn: 4})
		r.add(session.TypeStepStart, session.StepBoundary{Turn: 4, Step: 1})
		r.chunk(4, 1, llm.Chunk{Type: llm.ChunkBlockStart, Index: 0, BlockType: llm.BlockText})
		r.chunk(4, 1, llm.Chunk{Type: llm.ChunkTextDelta, Index: 0, Text: "partial"})
		r.add(session.TypeLLMRetry, session.LLMRetry{RetryID: "r1", Turn: 4, Step: 1, Retry: 1, MaxRetries: 3, DelayMs: 2000,
			Failure: llm.Failure{Code: llm.CodeRateLimit, Message: "slow down"}})
		r.add(session.TypeLLMRetryStarted, session.LLMRetryStarted{RetryID: "r1", Turn: 4, Step: 1, Retry: 1})
		r.stream(4, 1, 0, llm.BlockText, "second try")
		r.add(session.TypeAssistantMessage, session.AssistantMessage{Turn: 4, Step: 1, Interrupted: true,
			Message: llm.Message{ID: "a4", Role: llm.RoleAssistant, Content: []llm.ContentBlock{llm.Text("second try")}}})
		r.add(session.TypeTurnEnd, session.TurnEnd{Turn: 4, Reason: session.TurnEndReason{Kind: session.ReasonError,
			Error: &llm.Failure{Code: llm.CodeAuth, Status: 401, Message: "bad key sk-live-abcdef0123456789"}}})
	}},
	{"settings and workspace notices", func(r *run) {
		r.add(session.TypeRequestContext, session.RequestContext{Provider: "p", Model: "m", ContextWindow: 64_000})
		r.add(session.TypePermissionMode, session.PermissionModeSet{Mode: session.PermissionMode("read-only"), By: by})
		r.add(session.TypeModelSelected, session.ModelSelected{Provider: "p", Model: "m2", By: by})
		r.add(session.TypeWorkspaceReady, session.WorkspaceReady{Kind: "clone", Source: "https://example.com/r.git", Commit: "0123456789abcdef", Files: 3, Bytes: 4096})
		r.add(session.TypeWorkspaceFailed, session.WorkspaceFailed{Kind: "clone", Source: "x", Error: "no such repo."})
		r.add(session.TypeWorkspaceFailed, session.WorkspaceFailed{Kind: "fork", Source: "p", Error: "the server stopped while copying the workspace", Interrupted: true})
		r.add(session.TypeSessionTitle, session.SessionTitle{Title: "A <title>", Source: session.TitleSource("user")})
		r.add(session.TypeNetworkRefused, session.NetworkRefused{Host: "127.0.0.1", Port: 5432, Address: "127.0.0.1:5432", Reason: "loopback"})
	}},
	{"compactions", func(r *run) {
		r.add(session.TypeCompactionStart, session.CompactionStart{CompactionID: "k1"})
		r.add(session.TypeCompactionSum, session.CompactionSummary{CompactionID: "k1", Summary: []llm.ContentBlock{llm.Text("## Summary\n- done")}, ShadowedSeqs: []int64{1, 2}, ShadowedTokenCount: 1200})
		r.add(session.TypeCompactionEnd, session.CompactionEnd{CompactionID: "k1"})
		turn := 5
		r.add(session.TypeCompactionStart, session.CompactionStart{CompactionID: "k2", Turn: &turn})
		r.add(session.TypeCompactionEnd, session.CompactionEnd{CompactionID: "k2", Turn: &turn, Error: "the model refused"})
	}},
}

// TestProjectionMatchesFold: for every kind of event, a page that received
// the live fragments of a run from an empty page shows the items the fold
// of the run shows — after the whole run and after every prefix that ends
// outside a stream (inside one the browser shows the raw deltas, which the
// DOM model does not apply) — for each viewer class. The fold and the live
// path are one projection, so they cannot drift; this holds them to it.
func TestProjectionMatchesFold(t *testing.T) {
	t.Parallel()
	md := render.NewMarkdown()
	for _, tc := range projectionCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := &run{t: t}
			tc.build(r)
			for _, c := range []class{owner, adaReader, reader, shareLink} {
				p := newLive(nil, 0, render.ProjectionOptions{})
				page := newPage(t)
				for i, ev := range r.evs {
					page.apply(t, live(t, p, ev, c))
					tr := md.Fold(r.evs[:i+1], render.FoldOptions{ViewerID: c.viewerID})
					if tr.Malformed != 0 {
						t.Fatalf("seq %d: %d malformed events", ev.Seq, tr.Malformed)
					}
					if i < len(r.evs)-1 && inStream(tr.Items) {
						continue
					}
					want := normalize(t, renderItems(t, tr.Items))
					if got := inner(t, page.transcript); got != want {
						t.Fatalf("class %+v, after seq %d (%s): live page differs from the fold:\n%s", c, ev.Seq, ev.Type, firstDiffText(want, got))
					}
					var dock strings.Builder
					if err := render.TodoDock(tr.Todos).Render(t.Context(), &dock); err != nil {
						t.Fatal(err)
					}
					if tr.Todos != nil {
						if got, want := inner(t, page.dock), normalize(t, dock.String()); got != want {
							t.Fatalf("after seq %d: dock differs:\n%s", ev.Seq, firstDiffText(want, got))
						}
					}
				}
				if got := inner(t, page.takeover); got != "" {
					t.Errorf("class %+v: answered prompts still take over the composer: %s", c, got)
				}
			}
		})
	}
}

// inStream: the fold shows a block still streaming or a tool's live
// output, which a page gets from the events themselves.
func inStream(items []render.Item) bool {
	for _, it := range items {
		switch v := it.(type) {
		case *render.TextItem:
			if v.Streaming {
				return true
			}
		case *render.ReasoningItem:
			if v.Streaming {
				return true
			}
		case *render.ToolCallDraftItem:
			return true
		case *render.ToolItem:
			if v.Output != "" {
				return true
			}
		}
	}
	return false
}

// TestProjectionCoversTheVocabulary: the cases above log every event type
// the live path renders, and each of those gives a fragment.
func TestProjectionCoversTheVocabulary(t *testing.T) {
	t.Parallel()
	rendered := map[session.Type]bool{}
	for _, tc := range projectionCases {
		r := &run{t: t}
		tc.build(r)
		p := newLive(nil, 0, render.ProjectionOptions{})
		for _, ev := range r.evs {
			if live(t, p, ev, owner) != "" {
				rendered[ev.Type] = true
			}
		}
	}
	for _, typ := range []session.Type{
		session.TypeUserMessage, session.TypeAssistantChunk, session.TypeAssistantMessage, session.TypeToolCall,
		session.TypeToolOutput, session.TypeToolResult, session.TypeTodoWrite, session.TypeApprovalAsked,
		session.TypeApprovalDecided, session.TypeQuestionAsked, session.TypeQuestionAnswered, session.TypeLLMRetry,
		session.TypeLLMRetryStarted, session.TypeTurnEnd, session.TypeCompactionSum, session.TypeCompactionEnd,
		session.TypePermissionMode, session.TypeModelSelected, session.TypeWorkspaceReady, session.TypeWorkspaceFailed,
		session.TypeSessionTitle, session.TypeNetworkRefused,
	} {
		if !rendered[typ] {
			t.Errorf("no case renders a %s fragment", typ)
		}
	}
}

// TestProjectionSessionTitle: the title is filled into the page header.
func TestProjectionSessionTitle(t *testing.T) {
	t.Parallel()
	r := &run{t: t}
	r.add(session.TypeSessionTitle, session.SessionTitle{Title: "A <title>", Source: session.TitleSource("user")})
	page := newPage(t)
	page.apply(t, live(t, newLive(nil, 0, render.ProjectionOptions{}), r.evs[0], shareLink))
	if got := inner(t, page.title); got != "A &lt;title&gt;" {
		t.Errorf("title %q", got)
	}
}

// TestProjectionMalformedEvent: an event whose data does not decode is an
// error from Apply that changes nothing (empty fragment, later events
// still render), and the page fold skips it and counts it.
func TestProjectionMalformedEvent(t *testing.T) {
	t.Parallel()
	md := render.NewMarkdown()
	for _, typ := range []session.Type{
		session.TypeUserMessage, session.TypeAssistantChunk, session.TypeAssistantMessage, session.TypeToolCall,
		session.TypeToolResult, session.TypeApprovalAsked, session.TypeTurnEnd, session.TypeModelSelected,
		session.TypeCompactionSum, session.TypeSessionTitle, session.TypeRequestContext,
	} {
		t.Run(string(typ), func(t *testing.T) {
			t.Parallel()
			bad := session.Event{Seq: 0, Time: 1, Type: typ, Data: json.RawMessage(`[1, 2]`)}
			r := &run{t: t}
			r.add(session.TypeUserMessage, user("m1", "hi", "u-ada", "Ada"))
			good := r.evs[0]
			good.Seq = 1

			p := newLive(nil, 0, render.ProjectionOptions{})
			err := p.Apply(bad)
			var syntax *json.UnmarshalTypeError
			if err == nil || !strings.Contains(err.Error(), string(typ)) || !errors.As(err, &syntax) {
				t.Fatalf("Apply of a malformed %s: %v, want a wrapped decode error naming the event", typ, err)
			}
			if h, err := p.Fragment(true, "u-ada"); h != "" || err != nil {
				t.Errorf("fragment of a malformed event: %q, %v", h, err)
			}
			if h := live(t, p, good, owner); !strings.Contains(h, "u-m1") {
				t.Errorf("the next event does not render: %q", h)
			}

			tr := md.Fold([]session.Event{bad, good}, render.FoldOptions{})
			if tr.Malformed != 1 || len(tr.Items) != 1 || tr.First != 0 || tr.Last != 1 {
				t.Errorf("fold: %d malformed, %d items, seqs %d..%d; want 1, 1, 0..1", tr.Malformed, len(tr.Items), tr.First, tr.Last)
			}
		})
	}
}

// TestProjectionPrimesTheTurn: a projection opened at any point of a real
// session (a topic opened, or a page reloaded, mid-turn) renders every
// later event exactly as one that followed the session from its start: it
// finds in the log what the turn's later events need (the call a result
// completes, the arguments an approval shows, the usage a turn/end sums,
// a compaction's trigger, a streaming block's text for previews).
func TestProjectionPrimesTheTurn(t *testing.T) {
	t.Parallel()
	md := render.NewMarkdown()
	for _, name := range []string{"demo-tools", "failures", "compaction", "subagent", "subagent-child"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			evs := loadFixture(t, name)
			l := fixtureLog(t, evs)
			// Fragments of a projection that saw everything.
			full := newLive(nil, 0, render.ProjectionOptions{PreviewInterval: time.Millisecond})
			want := make([][2]string, len(evs))
			for i, ev := range evs {
				want[i][0] = live(t, full, ev, owner)
				h, err := full.Fragment(false, "")
				if err != nil {
					t.Fatal(err)
				}
				want[i][1] = h
			}
			stride := max(1, len(evs)/60)
			for cut := 0; cut < len(evs); cut += stride {
				p := render.NewProjection(md, "fixture", l, int64(cut), render.ProjectionOptions{PreviewInterval: time.Millisecond})
				for i, ev := range evs[cut:] {
					got := live(t, p, ev, owner)
					h, err := p.Fragment(false, "")
					if err != nil {
						t.Fatal(err)
					}
					if w := want[cut+i]; got != w[0] || h != w[1] {
						t.Fatalf("primed at %d: seq %d %s:\n got %s\nwant %s", cut, ev.Seq, ev.Type, got, w[0])
					}
				}
			}
		})
	}
}
