package importer_test

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"harness/internal/importer"
	"harness/internal/llm"
	"harness/internal/session"
)

// corpusDir holds the DeepSeek Harness session logs of the shared corpus.
const corpusDir = "/work/shared/corpus/dsh-sessions"

// corpusInvalid lists the corpus files that are invalid upstream, with the
// reason the import gives (a substring of the error).
var corpusInvalid = map[string]string{
	// The recording kept the packed rows' neighbours but lost the rows
	// themselves (seqs 6–86 are missing); DeepSeek Harness requires
	// contiguous seqs (events[i].seq === i) and refuses it too.
	"apps--web--cordis-tool-round--session.jsonl": "line 8: seq gap: expected seq 6, got 87",
	// A hand-written snapshot fixture: its first event has seq 1 (and is a
	// turn/end without a turn number or an open turn).
	"packages--test-support--acp-snapshot--tests--fixtures--suite--authored-error--session.jsonl": "line 2: seq gap: expected seq 0, got 1",
	// A fragment: the stream chunks of turn 1 step 1 with no turn/start or
	// step/start before them, which upstream's invariants (§1.9: chunks
	// name the open turn and step) forbid.
	"examples--headless-agent--ralph-loop--session.2.jsonl": "line 2: seq 0 (assistant/chunk): names turn 1 step 1, not the open step",
}

func readFile(t *testing.T, path string, opts importer.Options) (*importer.Result, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return importer.Read(f, opts)
}

// checkLoads asserts the promise of Read: the events load, pass the
// invariants, need no repair, and seed a session.
func checkLoads(t *testing.T, events []session.Event) *session.Log {
	t.Helper()
	l, err := session.Load(session.Header{ID: "x"}, events, session.Options{})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if err := session.CheckInvariants(events); err != nil {
		t.Fatalf("invariants: %v", err)
	}
	if d := session.RepairClosers(events); d != nil {
		t.Fatalf("the imported log still needs %d closers", len(d))
	}
	if _, err := session.NewSeeded(session.Header{ID: "y"}, events, session.Options{}); err != nil {
		t.Fatalf("seed: %v", err)
	}
	checkToolPairing(t, l.DeriveMessages())
	return l
}

// checkToolPairing asserts every tool-call block is answered right after
// its message, in model order: what a provider needs to continue.
func checkToolPairing(t *testing.T, msgs []llm.Message) {
	t.Helper()
	for i, m := range msgs {
		for k, call := range m.ToolCalls() {
			j := i + 1 + k
			if j >= len(msgs) || msgs[j].Source.CallID != call.ID {
				t.Fatalf("tool call %s of message %d is not answered at %d", call.ID, i, j)
			}
		}
	}
}

func TestCorpus(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(corpusDir, "*.jsonl"))
	if err != nil || len(files) < 70 {
		t.Fatalf("corpus: %d files, %v", len(files), err)
	}
	seen := 0
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res, err := readFile(t, path, importer.Options{})
			if want, bad := corpusInvalid[name]; bad {
				var ie *importer.Error
				if err == nil || !errors.As(err, &ie) || !strings.Contains(err.Error(), want) {
					t.Fatalf("err %v, want one containing %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatalf("import: %v", err)
			}
			if res.Format != importer.FormatDSH {
				t.Fatalf("format %s", res.Format)
			}
			if _, err := session.Load(res.Header, res.Events, session.Options{}); err != nil {
				t.Fatalf("load with the result's header: %v", err)
			}
			l := checkLoads(t, res.Events)
			if res.Title != "" && l.State().Title != res.Title {
				t.Fatalf("title %q, log says %q", res.Title, l.State().Title)
			}
			for _, ev := range res.Events {
				if ev.Ignorable == session.KnownTypes[ev.Type] {
					t.Fatalf("seq %d %s: ignorable=%v", ev.Seq, ev.Type, ev.Ignorable)
				}
			}
		})
		seen++
	}
	for name := range corpusInvalid {
		if _, err := os.Stat(filepath.Join(corpusDir, name)); err != nil {
			t.Errorf("the table names %s, which is not in the corpus", name)
		}
	}
}

// TestCorpusShapes checks the conversions on the files that show them.
func TestCorpusShapes(t *testing.T) {
	t.Parallel()
	read := func(name string) *importer.Result {
		res, err := readFile(t, filepath.Join(corpusDir, name), importer.Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	find := func(res *importer.Result, typ session.Type) []session.Event {
		var out []session.Event
		for _, ev := range res.Events {
			if ev.Type == typ {
				out = append(out, ev)
			}
		}
		return out
	}

	t.Run("older inline shape and flat tool/result", func(t *testing.T) {
		res := read("apps--web--fresh-round-trip--session.jsonl")
		um := find(res, session.TypeUserMessage)[0]
		m, err := session.Decode[llm.Message](um)
		if err != nil || m.ID != "imported-1" || m.Role != llm.RoleUser || m.Source.Kind != llm.SourceUser {
			t.Fatalf("user message %+v %v", m, err)
		}
		am, err := session.Decode[session.AssistantMessage](find(res, session.TypeAssistantMessage)[0])
		if err != nil || am.Message.Source != (llm.Source{Kind: llm.SourceModel, Provider: "deepseek-official", Model: "deepseek-v4-flash"}) || len(am.Message.ToolCalls()) != 1 || am.Usage == nil {
			t.Fatalf("assistant message %+v %v", am, err)
		}
		tr, err := session.Decode[session.ToolResult](find(res, session.TypeToolResult)[0])
		if err != nil || tr.Message.Source.CallID != am.Message.ToolCalls()[0].ID || !strings.Contains(tr.Message.Content[0].Content[0].Text, "WEB_E2E_OK") {
			t.Fatalf("tool result %+v %v", tr, err)
		}
		if res.Route != (importer.Route{Provider: "deepseek", Model: "deepseek-v4-flash"}) || res.FirstPrompt == "" || res.Header.CreatedAt != 1784973850091 {
			t.Fatalf("route %+v first %q", res.Route, res.FirstPrompt)
		}
	})
	t.Run("title source object", func(t *testing.T) {
		res := read("examples--acp-agent--bash-tool-turn--session.jsonl")
		ev := find(res, session.TypeSessionTitle)[0]
		if strings.Contains(string(ev.Data), "messageSeqs") || !strings.Contains(string(ev.Data), `"source":"fallback"`) {
			t.Fatalf("title %s", ev.Data)
		}
	})
	t.Run("packed rows", func(t *testing.T) {
		res := read("examples--acp-agent--bash-tool-turn--session.jsonl")
		if len(res.Events) != 102 {
			t.Fatalf("%d events", len(res.Events))
		}
		var text strings.Builder
		for _, ev := range find(res, session.TypeAssistantChunk) {
			c, _ := session.Decode[session.AssistantChunk](ev)
			if c.Chunk.Type == llm.ChunkReasoningDelta && c.Step == 1 {
				text.WriteString(c.Chunk.Text)
			}
		}
		am, _ := session.Decode[session.AssistantMessage](find(res, session.TypeAssistantMessage)[0])
		if am.Message.Content[0].Text != text.String() {
			t.Fatalf("reasoning deltas %q, message %q", text.String(), am.Message.Content[0].Text)
		}
	})
	t.Run("images", func(t *testing.T) {
		res := read("examples--acp-agent--inline-image-prompt--session.jsonl")
		m, _ := session.Decode[llm.Message](find(res, session.TypeUserMessage)[0])
		if want := "Inspect this image, then reply with exactly [image: sha256:b1ff9c8ea3a7…, image/png]the single word DONE."; m.Text() != want {
			t.Fatalf("user text %q, want %q", m.Text(), want)
		}
		res = read("examples--acp-agent--read-image--session.jsonl")
		tr, _ := session.Decode[session.ToolResult](find(res, session.TypeToolResult)[0])
		inner := tr.Message.Content[0].Content
		if last := inner[len(inner)-1]; last.Type != llm.BlockText || last.Text != "[image: red.png, image/png]" {
			t.Fatalf("tool result blocks %+v", inner)
		}
		for _, ev := range res.Events {
			if bytes.Contains(ev.Data, []byte(`"type":"image"`)) && !ev.Ignorable {
				t.Fatalf("seq %d %s still holds an image block", ev.Seq, ev.Type)
			}
		}
	})
	t.Run("permission preset", func(t *testing.T) {
		if res := read("examples--acp-agent--subagent-continuable-inheritance--session.jsonl"); res.Mode != session.ModeReadOnly {
			t.Fatalf("mode %q", res.Mode)
		}
		if res := read("examples--acp-agent--bash-tool-turn--session.jsonl"); res.Mode != "" {
			t.Fatalf("mode %q", res.Mode)
		}
	})
	t.Run("approvals delegated by a parent", func(t *testing.T) {
		if res := read("examples--acp-agent--advanced-toolchain--session.1.jsonl"); !res.DelegatedApprovals {
			t.Fatal("a subagent log's policy is not seen as delegated")
		}
		if res := read("examples--acp-agent--bash-tool-turn--session.jsonl"); res.DelegatedApprovals {
			t.Fatal("a top-level log's policy is seen as delegated")
		}
	})
	t.Run("headers outside a turn, no provider, open turn", func(t *testing.T) {
		res := read("packages--test-support--acp-snapshot--tests--fixtures--suite--shared-pin--session.jsonl")
		if got := types(res.Events); !slices.Equal(got, []session.Type{session.TypeTurnStart, session.TypeTurnEnd}) {
			t.Fatalf("events %v", got)
		}
		end, _ := session.Decode[session.TurnEnd](res.Events[1])
		if end.Reason.Kind != session.ReasonInterrupted || res.Closed != 1 || len(res.Notes) < 2 {
			t.Fatalf("end %+v closed %d notes %v", end, res.Closed, res.Notes)
		}
	})
}

func types(events []session.Event) []session.Type {
	out := make([]session.Type, len(events))
	for i, ev := range events {
		out[i] = ev.Type
	}
	return out
}

// dsh builds a DeepSeek Harness log from lines (a header is added).
func dsh(lines ...string) string {
	return `{"type":"session","version":0,"id":"s","createdAt":1}` + "\n" + strings.Join(lines, "\n") + "\n"
}

const (
	turnStart = `{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}`
	stepStart = `{"type":"step/start","seq":1,"time":1,"data":{"turn":1,"step":1}}`
)

func TestCorrupt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		opts importer.Options
		code importer.Code
		want string
	}{
		{"bad JSON", dsh(turnStart, stepStart, `{"type":"step/end","seq":2,`), importer.Options{}, importer.CodeInvalidJSON, "line 4: invalid JSON"},
		{"not an object", dsh(`[1,2]`), importer.Options{}, importer.CodeInvalidJSON, "line 2: invalid JSON: not a JSON object"},
		{"seq gap", dsh(turnStart, `{"type":"step/start","seq":2,"time":1,"data":{"turn":1,"step":1}}`), importer.Options{}, importer.CodeSeq, "line 3: seq gap: expected seq 1, got 2"},
		{"duplicate seq", dsh(turnStart, `{"type":"step/start","seq":0,"time":1,"data":{"turn":1,"step":1}}`), importer.Options{}, importer.CodeSeq, "line 3: duplicate seq 0"},
		{"tool/result without its call", dsh(turnStart, stepStart,
			`{"type":"tool/result","seq":2,"time":1,"data":{"turn":1,"step":1,"callId":"x","content":[],"isError":false},"surfaceOp":"append"}`),
			importer.Options{}, importer.CodeInvalid, `line 4: tool/result cites call "x" that no tool/call opened`},
		{"unknown version", `{"type":"session","version":2,"id":"s","createdAt":1}` + "\n" + turnStart, importer.Options{}, importer.CodeVersion, "line 1: unknown session format version 2"},
		{"too many bytes", dsh(turnStart, stepStart, strings.Repeat(" ", 200)), importer.Options{MaxBytes: 190}, importer.CodeTooLarge, "line 4: the input is larger than the import cap"},
		{"too many events", dsh(turnStart, stepStart, `{"type":"step/end","seq":2,"time":1,"data":{"turn":1,"step":1}}`), importer.Options{MaxEvents: 2}, importer.CodeTooLarge, "line 4: more than 2 events"},
		{"empty", "\n \n", importer.Options{}, importer.CodeEmpty, "empty"},
		{"header-delta", dsh(`{"type":"request/header-delta","seq":0,"time":1,"data":{}}`), importer.Options{}, importer.CodeUnsupported, "line 2: legacy request/header-delta"},
		{"header twice", dsh(`{"type":"session","version":0,"id":"s","createdAt":1}`), importer.Options{}, importer.CodeUnsupported, "line 2: a session header may only be the first line"},
		{"unknown envelope key", dsh(`{"type":"turn/start","seq":0,"time":1,"data":{"turn":1},"extra":1}`), importer.Options{}, importer.CodeInvalid, `line 2: event: json: unknown field "extra"`},
		{"turn numbering", dsh(`{"type":"turn/start","seq":0,"time":1,"data":{"turn":3}}`), importer.Options{}, importer.CodeInvalid, "line 2: seq 0 (turn/start): turn/start 3, want the next turn 1"},
		{"bad packed row", dsh(turnStart, stepStart, `{"type":"text-chunks","seq0":2,"time0":1,"data":{"turn":1,"step":1,"index":0,"dt":[],"texts":["a","b"]}}`),
			importer.Options{}, importer.CodeUnsupported, "line 4: text-chunks holds 2 deltas but 0 time offsets"},
		{"harness export with a gap", `{"seq":0,"time":1,"type":"turn/start","data":{"turn":1}}` + "\n" + `{"seq":2,"time":1,"type":"turn/end","data":{"turn":1,"reason":{"kind":"completed"}}}`,
			importer.Options{}, importer.CodeSeq, "line 2: seq gap: expected seq 1, got 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := importer.Read(strings.NewReader(tt.in), tt.opts)
			var ie *importer.Error
			if !errors.As(err, &ie) {
				t.Fatalf("got %v (%+v), want an *importer.Error", err, res)
			}
			if ie.Code != tt.code || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %q (code %s), want code %s containing %q", err, ie.Code, tt.code, tt.want)
			}
			if !errors.Is(err, &importer.Error{Code: tt.code}) {
				t.Fatalf("errors.Is does not match the code")
			}
		})
	}
}

// TestHarnessExport reads a Harness export: events byte for byte.
func TestHarnessExport(t *testing.T) {
	t.Parallel()
	l := session.New(session.Header{ID: "h"}, session.Options{})
	must := func(_ session.Event, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(l.Append(session.TypeTurnStart, session.TurnStart{Turn: 1}))
	must(l.Append(session.TypeStepStart, session.StepBoundary{Turn: 1, Step: 1}))
	must(l.AppendSurface(session.TypeUserMessage, llm.UserText("list <files> & more", llm.Source{Kind: llm.SourceUser, UserID: "u1", Name: "Alice"}), session.Append(), nil))
	call := llm.ToolCall("c1", "bash", `{"command":"ls"}`)
	must(l.AppendSurface(session.TypeAssistantMessage, session.AssistantMessage{Turn: 1, Step: 1,
		Message: llm.Message{ID: "a1", Role: llm.RoleAssistant, Content: []llm.ContentBlock{call}, Source: llm.Source{Kind: llm.SourceModel, Provider: "demo", Model: "demo-1"}}}, session.Append(), []int64{}))
	must(l.Append(session.TypeToolCall, session.ToolCall{Turn: 1, Step: 1, CallID: "c1", Name: "bash", Arguments: `{"command":"ls"}`}))
	must(l.AppendSurface(session.TypeToolResult, session.ToolResult{Turn: 1, Step: 1, Message: llm.ToolResultMessage("r1", "c1", []llm.ContentBlock{llm.Text("a\n")}, false)}, session.Append(), []int64{4}))
	must(l.Append(session.TypeStepEnd, session.StepBoundary{Turn: 1, Step: 1}))
	must(l.Append(session.TypeTurnEnd, session.TurnEnd{Turn: 1, Reason: session.TurnEndReason{Kind: session.ReasonCompleted}}))
	must(l.Append(session.TypeSessionTitle, session.SessionTitle{Title: "Files", Source: session.TitleUser}))
	var buf bytes.Buffer
	src := l.Events(0, l.Len())
	for _, ev := range src {
		b, err := session.MarshalEvent(ev)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	res, err := importer.Read(&buf, importer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Format != importer.FormatHarness || len(res.Events) != len(src) || res.Title != "Files" || res.FirstPrompt != "list <files> & more" || len(res.Notes) != 0 {
		t.Fatalf("result %+v", res)
	}
	for i, ev := range res.Events {
		a, _ := session.MarshalEvent(ev)
		b, _ := session.MarshalEvent(src[i])
		if !bytes.Equal(a, b) {
			t.Fatalf("seq %d changed:\n%s\n%s", i, a, b)
		}
	}
	checkLoads(t, res.Events)
}

// TestOpenTurn closes a log cut while a tool ran, as crash repair does.
func TestOpenTurn(t *testing.T) {
	t.Parallel()
	in := dsh(turnStart, stepStart,
		`{"type":"user/message","seq":2,"time":5,"data":{"content":[{"type":"text","text":"go"}],"source":{"kind":"user"}},"surfaceOp":"append"}`,
		`{"type":"assistant/message","seq":3,"time":6,"data":{"turn":1,"step":1,"content":[{"type":"tool-call","id":"c1","name":"bash","arguments":"{}"},{"type":"tool-call","id":"c2","name":"bash","arguments":"{}"}],"provenance":{"provider":"deepseek-official","model":"m"}},"surfaceOp":"append"}`,
		`{"type":"tool/call","seq":4,"time":7,"data":{"turn":1,"step":1,"callId":"c1","name":"bash","arguments":"{}"}}`,
	)
	res, err := importer.Read(strings.NewReader(in), importer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []session.Type{session.TypeTurnStart, session.TypeStepStart, session.TypeUserMessage, session.TypeAssistantMessage, session.TypeToolCall,
		session.TypeToolResult, session.TypeToolResult, session.TypeStepEnd, session.TypeTurnEnd}
	if got := types(res.Events); !slices.Equal(got, want) || res.Closed != 4 {
		t.Fatalf("events %v closed %d", got, res.Closed)
	}
	tr, _ := session.Decode[session.ToolResult](res.Events[5])
	if tr.Error == nil || tr.Error.Code != session.CodeToolOutcomeUnknown || res.Events[8].Time != 7 {
		t.Fatalf("closer %+v at %d", tr.Error, res.Events[8].Time)
	}
	checkLoads(t, res.Events)
}

// A log whose last compaction never ended (its writer died) gets the end
// crash repair gives it: the compaction was interrupted.
func TestOpenCompaction(t *testing.T) {
	t.Parallel()
	in := dsh(`{"type":"compaction/start","seq":0,"time":5,"data":{"compactionId":"k1","turn":null}}`)
	res, err := importer.Read(strings.NewReader(in), importer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []session.Type{session.TypeCompactionStart, session.TypeCompactionEnd}
	if got := types(res.Events); !slices.Equal(got, want) || res.Closed != 1 {
		t.Fatalf("events %v closed %d", got, res.Closed)
	}
	end, _ := session.Decode[session.CompactionEnd](res.Events[1])
	if end.CompactionID != "k1" || end.Turn != nil || end.Error != session.CompactionInterrupted {
		t.Fatalf("end %+v", end)
	}
	checkLoads(t, res.Events)
}

// TestConvert covers shapes the corpus shows only outside a turn: a
// request/header without provider and with tools given as names, a title
// from the model, and an event dropped in the middle (seqs renumbered,
// citations follow).
func TestConvert(t *testing.T) {
	t.Parallel()
	in := strings.Join([]string{
		// no header: a seed
		`{"type":"todo/write","seq":0,"time":1,"data":{"todos":[]}}`,
		turnStart[:len(`{"type":"turn/start","seq":`)] + `1,"time":1,"data":{"turn":1}}`,
		`{"type":"step/start","seq":2,"time":1,"data":{"turn":1,"step":1}}`,
		`{"type":"request/header","seq":3,"time":1,"data":{"header":{"config":{"model":"fake"},"tools":["bash","read"]},"reason":"initial"}}`,
		`{"type":"text-chunks","seq0":4,"time0":10,"data":{"turn":1,"step":1,"index":0,"dt":[2,3],"texts":["a","b","c"]}}`,
		`{"type":"assistant/message","seq":7,"time":20,"data":{"turn":1,"step":1,"message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"abc"}],"source":{"kind":"model","provider":"p","model":"fake"}}},"surfaceOp":"append","sourceEventSeqs":[4,5,6]}`,
		`{"type":"step/end","seq":8,"time":21,"data":{"turn":1,"step":1}}`,
		`{"type":"turn/end","seq":9,"time":21,"data":{"turn":1,"reason":{"kind":"completed"}}}`,
		`{"type":"session/title","seq":10,"time":22,"data":{"title":"Abc","source":{"kind":"llm"}}}`,
		`{"type":"goal/change","seq":11,"time":22,"data":{"goal":null}}`,
	}, "\n")
	res, err := importer.Read(strings.NewReader(in), importer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Format != importer.FormatDSH || len(res.Events) != 11 {
		t.Fatalf("format %s, %d events: %v", res.Format, len(res.Events), types(res.Events))
	}
	hdr, err := session.Decode[session.RequestHeader](res.Events[2])
	if err != nil || hdr.Header.Config.Provider != "unknown" || hdr.Header.Config.Model != "fake" || len(hdr.Header.Tools) != 2 || hdr.Header.Tools[1].Name != "read" {
		t.Fatalf("header %+v %v", hdr, err)
	}
	chunk, _ := session.Decode[session.AssistantChunk](res.Events[4])
	if res.Events[4].Seq != 4 || res.Events[4].Time != 12 || chunk.Chunk.Text != "b" {
		t.Fatalf("second delta %+v at seq %d time %d", chunk, res.Events[4].Seq, res.Events[4].Time)
	}
	if am := res.Events[6]; am.Type != session.TypeAssistantMessage || !slices.Equal(am.SourceEventSeqs, []int64{3, 4, 5}) {
		t.Fatalf("assistant message %s cites %v", am.Type, am.SourceEventSeqs)
	}
	title, _ := session.Decode[session.SessionTitle](res.Events[9])
	if title.Source != session.TitleModel || !res.Events[10].Ignorable || res.Title != "Abc" {
		t.Fatalf("title %+v, goal ignorable %v", title, res.Events[10].Ignorable)
	}
	if res.Route != (importer.Route{Provider: "", Model: ""}) {
		t.Fatalf("route %+v (an unknown provider is no route)", res.Route)
	}
	checkLoads(t, res.Events)
}

func TestUnpack(t *testing.T) {
	t.Parallel()
	data := json.RawMessage(`{"turn":2,"step":3,"index":1,"dt":[5,0],"id":"c9","name":"read","args":["{","\"a\"",":1}"]}`)
	evs, err := importer.Unpack("tool-call-chunks", 40, 1000, data)
	if err != nil || len(evs) != 3 {
		t.Fatalf("%d events, %v", len(evs), err)
	}
	for k, ev := range evs {
		c, err := session.Decode[session.AssistantChunk](ev)
		if err != nil || ev.Seq != int64(40+k) || c.Turn != 2 || c.Step != 3 || c.Chunk.Type != llm.ChunkToolCallDelta || c.Chunk.ID != "c9" || c.Chunk.Index != 1 {
			t.Fatalf("delta %d: %+v seq %d %v", k, c, ev.Seq, err)
		}
		if (c.Chunk.Name == "read") != (k == 0) {
			t.Fatalf("delta %d name %q", k, c.Chunk.Name)
		}
	}
	if evs[1].Time != 1005 || evs[2].Time != 1005 {
		t.Fatalf("times %d %d", evs[1].Time, evs[2].Time)
	}
	if _, err := importer.Unpack("bogus-chunks", 0, 0, data); err == nil {
		t.Fatal("unknown packed type accepted")
	}
}

// TestContainers reads a log as DeepSeek Harness stores it
// (session.jsonl.zstd, one frame per batch) and inside its export ZIP.
func TestContainers(t *testing.T) {
	t.Parallel()
	name := "examples--acp-agent--bash-tool-turn--session.jsonl"
	plain, err := os.ReadFile(filepath.Join(corpusDir, name))
	if err != nil {
		t.Fatal(err)
	}
	want, err := importer.Read(bytes.NewReader(plain), importer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Two frames, split mid-file, as batches are written.
	var zst bytes.Buffer
	for _, part := range [][]byte{plain[:len(plain)/2], plain[len(plain)/2:]} {
		enc, err := zstd.NewWriter(&zst, zstd.WithEncoderCRC(true))
		if err != nil {
			t.Fatal(err)
		}
		enc.Write(part)
		enc.Close()
	}
	var zipped bytes.Buffer
	zw := zip.NewWriter(&zipped)
	for _, f := range []struct {
		name string
		data []byte
	}{{"session.jsonl.zstd", zst.Bytes()}, {"subagents/child/session.jsonl", []byte("{}")}, {"media/sha256-x.png", []byte{1, 2}}} {
		w, err := zw.Create(f.name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(f.data)
	}
	zw.Close()

	for what, in := range map[string][]byte{"zstd": zst.Bytes(), "zip": zipped.Bytes()} {
		got, err := importer.Read(bytes.NewReader(in), importer.Options{})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if len(got.Events) != len(want.Events) {
			t.Fatalf("%s: %d events, want %d", what, len(got.Events), len(want.Events))
		}
		for i := range got.Events {
			if !bytes.Equal(got.Events[i].Data, want.Events[i].Data) {
				t.Fatalf("%s: seq %d differs", what, i)
			}
		}
	}
	// A ZIP without a log at its root, and a torn zstd stream.
	var empty bytes.Buffer
	zw = zip.NewWriter(&empty)
	zw.Create("media/a.png")
	zw.Close()
	if _, err := importer.Read(&empty, importer.Options{}); err == nil || !strings.Contains(err.Error(), "want one session log") {
		t.Fatalf("zip without a log: %v", err)
	}
	if _, err := importer.Read(bytes.NewReader(zst.Bytes()[:zst.Len()-7]), importer.Options{}); err == nil {
		t.Fatal("a torn zstd stream was read")
	}
}

// TestTornLastLine drops a last line cut short by a crash (DeepSeek Harness
// drops a torn final record too) and closes the turn it left open; a cut
// line followed by a newline, or in the middle, is an error.
func TestTornLastLine(t *testing.T) {
	t.Parallel()
	plain, err := os.ReadFile(filepath.Join(corpusDir, "examples--acp-agent--parallel-tool-calls--session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	torn := plain[:len(plain)-40]
	res, err := importer.Read(bytes.NewReader(append([]byte("\xef\xbb\xbf"), torn...)), importer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Closed == 0 || !strings.Contains(strings.Join(res.Notes, "; "), "incomplete (a torn last write)") {
		t.Fatalf("closed %d notes %v", res.Closed, res.Notes)
	}
	checkLoads(t, res.Events)
	lines := bytes.Count(torn, []byte("\n")) + 1
	if _, err := importer.Read(bytes.NewReader(append(torn, '\n')), importer.Options{}); err == nil || !strings.Contains(err.Error(), "line "+strconv.Itoa(lines)+": invalid JSON") {
		t.Fatalf("a cut line ended by a newline: %v", err)
	}
}
