package render_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"harness/internal/llm"
	"harness/internal/render"
	"harness/internal/session"
	"harness/internal/tools/builtin"
)

var xssPayloads = []string{
	`<script>alert(1)</script>`,
	`<img src=x onerror=alert(1)>`,
	`<svg onload=alert(1)><circle/></svg>`,
	`<iframe src="javascript:alert(1)"></iframe>`,
	`<a href="javascript:alert(1)">click</a>`,
	`[click](javascript:alert(1))`,
	`[click](JaVaScRiPt:alert(1))`,
	`[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)`,
	`[click](vbscript:msgbox(1))`,
	`<javascript:alert(1)>`,
	`![x](javascript:alert(1))`,
	`![x](https://evil.example/pixel.png)`,
	`<style>body{display:none}</style>`,
	`<details open ontoggle=alert(1)>x</details>`,
	`" onmouseover="alert(1)`,
	`'><script>alert(1)</script>`,
	"```\"><img src=x onerror=alert(1)>\ncode\n```",
	"```html\n<script>alert(1)</script>\n```",
	`<form action="https://evil.example"><input name=a></form>`,
	`<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>`,
	`<base href="https://evil.example/">`,
	`<meta http-equiv="refresh" content="0;url=javascript:alert(1)">`,
	`<div style="position:fixed;inset:0">overlay</div>`,
	`<p id="transcript">clobber</p>`,
}

// scriptSink reports what in an HTML fragment could run code, load a
// resource or restyle the page.
func scriptSink(t *testing.T, fragment string) []string {
	t.Helper()
	nodes, err := html.ParseFragment(strings.NewReader(fragment), &html.Node{Type: html.ElementNode, Data: "body", DataAtom: atom.Body})
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.DataAtom {
			case atom.Script, atom.Iframe, atom.Object, atom.Embed, atom.Style, atom.Img, atom.Svg, atom.Math,
				atom.Form, atom.Link, atom.Meta, atom.Base, atom.Frame, atom.Frameset, atom.Audio, atom.Video, atom.Source:
				bad = append(bad, "<"+n.Data+">")
			case atom.Input:
				if attr(n, "type") != "checkbox" || !hasAttr(n, "disabled") {
					bad = append(bad, "enabled <input>")
				}
			}
			for _, a := range n.Attr {
				k := strings.ToLower(a.Key)
				v := strings.ToLower(strings.TrimSpace(a.Val))
				switch {
				case strings.HasPrefix(k, "on"):
					bad = append(bad, "handler "+a.Key)
				case k == "style" || k == "srcdoc" || k == "formaction":
					bad = append(bad, "attribute "+a.Key)
				case (k == "href" || k == "src" || k == "action") &&
					(strings.HasPrefix(v, "javascript:") || strings.HasPrefix(v, "data:") || strings.HasPrefix(v, "vbscript:")):
					bad = append(bad, a.Key+"="+a.Val)
				case k == "id" && !strings.HasPrefix(v, "t-") && !strings.HasPrefix(v, "u-") && !strings.HasPrefix(v, "a-") &&
					!strings.HasPrefix(v, "q-") && !strings.HasPrefix(v, "b-") && !strings.HasPrefix(v, "e-") &&
					!strings.HasPrefix(v, "n-") && !strings.HasPrefix(v, "r-") && !strings.HasPrefix(v, "ut-") && !strings.HasPrefix(v, "c-") &&
					v != "todo-dock" && v != "ctx-meter":
					bad = append(bad, "foreign id "+a.Val)
				}
			}
			if n.DataAtom == atom.A && attr(n, "target") == "_blank" && !strings.Contains(attr(n, "rel"), "noopener") {
				bad = append(bad, "target=_blank without noopener")
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	for _, n := range nodes {
		walk(n)
	}
	return bad
}

func hasAttr(n *html.Node, key string) bool {
	for _, a := range n.Attr {
		if a.Key == key {
			return true
		}
	}
	return false
}

// hostileLog is a log where every text a model, a tool or a person
// controls carries payload p.
func hostileLog(t *testing.T, p string) []session.Event {
	t.Helper()
	now := int64(1_000_000)
	l := session.New(session.Header{ID: "fixture"}, session.Options{Clock: func() int64 { now += 300; return now }})
	add := func(typ session.Type, data any) {
		t.Helper()
		var err error
		if session.IsSurface(typ) {
			_, err = l.AppendSurface(typ, data, session.Append(), nil)
		} else {
			_, err = l.Append(typ, data)
		}
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
	}
	args, _ := json.Marshal(map[string]string{"command": p, "file_path": p})
	meta, _ := json.Marshal(builtin.BashMeta{DurationMs: 3})
	change, _ := json.Marshal(builtin.FileChangeMeta{Path: p, Diff: "--- a/" + p + "\n+++ b/x\n@@ -1 +1 @@\n-" + p + "\n+" + p + "\n", Added: 1, Removed: 1})
	model := llm.Source{Kind: llm.SourceModel, Provider: "p", Model: "m"}
	add(session.TypeSessionTitle, session.SessionTitle{Title: p, Source: session.TitleUser})
	add(session.TypeTurnStart, session.TurnStart{Turn: 1})
	add(session.TypeStepStart, session.StepBoundary{Turn: 1, Step: 1})
	add(session.TypeUserMessage, llm.UserText(p, llm.Source{Kind: llm.SourceUser, UserID: "u-eve", Name: p}))
	chunk := func(c llm.Chunk) { add(session.TypeAssistantChunk, session.AssistantChunk{Turn: 1, Step: 1, Chunk: c}) }
	chunk(llm.Chunk{Type: llm.ChunkBlockStart, Index: 0, BlockType: llm.BlockReasoning})
	chunk(llm.Chunk{Type: llm.ChunkReasoningDelta, Index: 0, Text: p})
	chunk(llm.Chunk{Type: llm.ChunkBlockStart, Index: 1, BlockType: llm.BlockText})
	chunk(llm.Chunk{Type: llm.ChunkTextDelta, Index: 1, Text: p})
	chunk(llm.Chunk{Type: llm.ChunkTextDelta, Index: 1, Text: "\n\n" + p})
	chunk(llm.Chunk{Type: llm.ChunkBlockStart, Index: 2, BlockType: llm.BlockToolCall, Name: p})
	chunk(llm.Chunk{Type: llm.ChunkBlockEnd, Index: 1, Block: &llm.ContentBlock{Type: llm.BlockText, Text: p + "\n\n" + p}})
	add(session.TypeAssistantMessage, session.AssistantMessage{Turn: 1, Step: 1, Message: llm.Message{
		ID: "m1", Role: llm.RoleAssistant, Source: model,
		Content: []llm.ContentBlock{{Type: llm.BlockReasoning, Text: p}, llm.Text(p), llm.ToolCall(p, "bash", string(args)), llm.ToolCall("c2", p, string(args)), llm.ToolCall("c3", "write", string(args))},
	}})
	for _, c := range []struct{ id, name string }{{p, "bash"}, {"c2", p}, {"c3", "write"}} {
		add(session.TypeToolCall, session.ToolCall{Turn: 1, Step: 1, CallID: c.id, Name: c.name, Arguments: string(args)})
	}
	add(session.TypeApprovalAsked, session.ApprovalAsked{ID: p, ToolName: p, CallID: p, Reason: p})
	add(session.TypeApprovalDecided, session.ApprovalDecided{ID: p, Outcome: session.ApprovalAllowedOnce, By: &session.Actor{Name: p}})
	add(session.TypeToolOutput, session.ToolOutput{Turn: 1, Step: 1, CallID: p, Stream: "stdout", Text: p})
	add(session.TypeToolResult, session.ToolResult{Turn: 1, Step: 1, Message: llm.ToolResultMessage("r1", p, []llm.ContentBlock{llm.Text(p)}, false), Meta: meta})
	add(session.TypeToolResult, session.ToolResult{Turn: 1, Step: 1, Message: llm.ToolResultMessage("r2", "c2", []llm.ContentBlock{llm.Text(p)}, true), Error: &session.ToolError{Name: p, Code: p}})
	add(session.TypeToolResult, session.ToolResult{Turn: 1, Step: 1, Message: llm.ToolResultMessage("r3", "c3", []llm.ContentBlock{llm.Text(p)}, false), Meta: change})
	add(session.TypeQuestionAsked, session.QuestionAsked{ID: p, Questions: []session.Question{{ID: p, Question: p, Options: []session.QuestionOption{{Label: p}}}}})
	add(session.TypeQuestionAnswered, session.QuestionAnswered{ID: p, Outcome: session.QuestionAnsweredOutcome, Answers: []session.Answer{{ID: p, Selected: []string{p}, Custom: p}}})
	add(session.TypeTodoWrite, session.TodoWrite{Todos: []session.Todo{{Content: p, Status: session.TodoStatus(p)}}})
	add(session.TypeStepEnd, session.StepBoundary{Turn: 1, Step: 1})
	add(session.TypeLLMRetry, session.LLMRetry{RetryID: p, Turn: 1, Step: 2, Retry: 1, DelayMs: 10, Failure: llm.Failure{Code: llm.Code(p), Message: p}})
	add(session.TypeTurnEnd, session.TurnEnd{Turn: 1, Reason: session.TurnEndReason{Kind: session.ReasonError, Error: &llm.Failure{Code: llm.Code(p), Message: p}}})
	add(session.TypeModelSelected, session.ModelSelected{Provider: p, Model: p, By: &session.Actor{Name: p}})
	add(session.TypeCompactionStart, session.CompactionStart{CompactionID: p, SourceCommandID: p})
	add(session.TypeCompactionSum, session.CompactionSummary{CompactionID: p, Summary: []llm.ContentBlock{llm.Text("## " + p + "\n\n" + p)}, ShadowedSeqs: []int64{3}, ShadowedTokenCount: 9})
	add(session.TypeUserMessage, llm.Message{ID: "cp", Role: llm.RoleUser, Content: []llm.ContentBlock{llm.Text(p)}, Source: llm.Source{Kind: llm.SourcePlugin, Plugin: llm.PluginCompact, CompactionID: p}})
	add(session.TypeCompactionEnd, session.CompactionEnd{CompactionID: p})
	add(session.TypeCompactionStart, session.CompactionStart{CompactionID: "c2"})
	add(session.TypeCompactionEnd, session.CompactionEnd{CompactionID: "c2", Error: p})
	return l.Events(0, l.Len())
}

// TestNothingExecutableSurvives renders every payload in every place a
// model, a tool or a person controls, through the page fold and the live
// fragments, and checks that no script, handler, dangerous URL, resource
// load, style or foreign id reaches the page.
func TestNothingExecutableSurvives(t *testing.T) {
	t.Parallel()
	md := render.NewMarkdown()
	for i, p := range xssPayloads {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			evs := hostileLog(t, p)
			var pages []string
			tr := md.Fold(evs, render.FoldOptions{})
			pages = append(pages, renderItems(t, tr.Items))
			var dock strings.Builder
			if err := render.TodoDock(tr.Todos).Render(t.Context(), &dock); err != nil {
				t.Fatal(err)
			}
			pages = append(pages, dock.String())
			// A mid-stream page (streaming blocks rendered from deltas).
			pages = append(pages, renderItems(t, md.Fold(evs[:10], render.FoldOptions{}).Items))
			r := render.NewProjection(md, "fixture", nil, 0, render.ProjectionOptions{
				Meter:           true,
				PreviewInterval: time.Millisecond,
			})
			for _, ev := range evs {
				for _, c := range []class{adaReader, shareLink} {
					if c == adaReader {
						pages = append(pages, live(t, r, ev, c))
						continue
					}
					h, err := r.Fragment(c.canAnswer, c.viewerID)
					if err != nil {
						t.Fatalf("seq %d: %v", ev.Seq, err)
					}
					pages = append(pages, h)
				}
			}
			pages = append(pages, md.Render(p), md.Render("# t\n\n"+p+"\n\n- "+p+"\n\n> "+p+"\n\n| "+p+" |\n|---|\n| x |"))
			for _, h := range pages {
				if bad := scriptSink(t, h); len(bad) > 0 {
					t.Errorf("payload %q: %v in\n%s", p, bad, h)
				}
			}
		})
	}
}

// TestSecretsRedacted: failure messages never show something that looks
// like a key.
func TestSecretsRedacted(t *testing.T) {
	t.Parallel()
	md := render.NewMarkdown()
	for _, msg := range []string{
		"Incorrect API key provided: sk-live-abcdef0123456789",
		"Authorization: Bearer abcdefghijklmnop1234",
		`{"error":"bad","api_key":"AKIA1234567890ABCDEF"}`,
		"token=" + strings.Repeat("x9", 30),
	} {
		evs := []session.Event{{Seq: 0, Type: session.TypeTurnEnd, Data: mustJSON(t, session.TurnEnd{Turn: 1, Reason: session.TurnEndReason{Kind: session.ReasonError, Error: &llm.Failure{Code: llm.CodeAuth, Message: msg}}})}}
		got := renderItems(t, md.Fold(evs, render.FoldOptions{}).Items)
		if !strings.Contains(got, "[redacted]") || strings.Contains(got, "abcdef0123456789") || strings.Contains(got, "abcdefghijklmnop1234") ||
			strings.Contains(got, "AKIA1234567890ABCDEF") || strings.Contains(got, strings.Repeat("x9", 30)) {
			t.Errorf("%q rendered as %s", msg, got)
		}
		if !strings.Contains(got, "AUTH") {
			t.Errorf("the code is not shown: %s", got)
		}
	}
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
