package fake

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"harness/internal/llm"
	"harness/internal/llm/openai"
)

// sharedCorpus is the full recorded corpus of the workspace.
const sharedCorpus = "/work/shared/corpus/dsh-sessions"

func TestLoadCorpus(t *testing.T) {
	t.Parallel()
	msgs, err := LoadCorpus(filepath.Join("testdata", "examples--acp-agent--bash-tool-turn--session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 {
		t.Fatalf("messages = %d, want 2", len(msgs))
	}
	first := msgs[0]
	if first.Turn != 1 || first.Step != 1 || first.Finish.Kind != llm.FinishToolCalls || first.Message.ID != "0a855246-fbf6-4f91-87b4-c6f1889effe7" {
		t.Fatalf("first = %+v", first)
	}
	r := first.Reply
	// 18 reasoning deltas and 31 tool-call fragments, packed in the log.
	var reasoning, tool int
	var paced time.Duration
	for _, f := range r.Frames {
		paced += f.Delay
		switch {
		case f.Reasoning != "":
			reasoning++
		case f.Tool != nil:
			tool++
		}
	}
	if reasoning != 18 || tool != 31 {
		t.Fatalf("frames: %d reasoning, %d tool", reasoning, tool)
	}
	if paced <= 0 {
		t.Fatal("replay lost the recorded pacing")
	}
	if r.Finish != "tool_calls" || r.Usage == nil || r.Usage.PromptTokens != 2877 || r.Usage.ReasoningTokens != 18 {
		t.Fatalf("reply finish %q usage %+v", r.Finish, r.Usage)
	}
	if r.Frames[18].Tool == nil || r.Frames[18].Tool.ID != "call_00_fkbBRJsUrGKd1pWVc4Gn8233" || r.Frames[18].Tool.Name != "bash" {
		t.Fatalf("first tool fragment = %+v", r.Frames[18])
	}

	if _, err := LoadCorpus(filepath.Join(t.TempDir(), "missing.jsonl")); err == nil {
		t.Fatal("missing corpus loaded")
	}
}

// wireTruth assembles what the recorded stream put on the wire: the deltas
// of each block, or its block-end when it had none. A few hand-edited
// fixtures carry block-ends (and messages) that disagree with their deltas;
// the wire cannot express that, so the replay streams the deltas.
func wireTruth(chunks []llm.Chunk) *llm.Assembler {
	hasDeltas := map[int]bool{}
	for _, c := range chunks {
		switch c.Type {
		case llm.ChunkTextDelta, llm.ChunkReasoningDelta, llm.ChunkToolCallDelta:
			hasDeltas[c.Index] = true
		}
	}
	var a llm.Assembler
	for _, c := range chunks {
		if c.Type == llm.ChunkBlockEnd && hasDeltas[c.Index] {
			continue
		}
		a.Add(c)
	}
	return &a
}

// replayFile streams every recorded assistant message of a log through the
// real adapter and checks it assembles to what the recorded stream sent.
// It returns how many messages it replayed and how many of those also equal
// the recorded assistant message exactly.
func replayFile(t *testing.T, path string) (replayed, exact int) {
	t.Helper()
	msgs, err := LoadCorpus(path)
	if err != nil {
		t.Fatal(err)
	}
	var replies []Reply
	var want []CorpusMessage
	for _, m := range msgs {
		if m.Interrupted || m.Finish.Kind == llm.FinishAborted || len(m.Chunks) == 0 {
			continue
		}
		replies = append(replies, m.Reply)
		want = append(want, m)
	}
	if len(replies) == 0 {
		return 0, 0
	}
	srv := NewServer(Script{Replies: replies}, WithTimeScale(0))
	p, err := openai.New(openai.Config{Name: "replay", Kind: openai.KindDeepSeek, BaseURL: srv.Start(t), DefaultModel: "deepseek-v4-flash", Thinking: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range want {
		var a llm.Assembler
		err := llm.Run(context.Background(), p, llm.Request{Messages: []llm.Message{llm.UserText("replay", llm.Source{Kind: llm.SourceUser})}},
			func(c llm.Chunk) error { a.Add(c); return nil })
		if err != nil {
			t.Fatal(err)
		}
		got := a.Message(m.Message.ID, m.Message.Source)
		want := wireTruth(m.Chunks).Message(m.Message.ID, m.Message.Source)
		if !reflect.DeepEqual(got.Content, want.Content) {
			t.Errorf("%s seq %d: content\n got %#v\nwant %#v", filepath.Base(path), m.Seq, got.Content, want.Content)
		}
		if reflect.DeepEqual(got.Content, m.Message.Content) {
			exact++
		}
		fin := a.Finish()
		if fin.Kind != m.Finish.Kind || (fin.Failure == nil) != (m.Finish.Failure == nil) ||
			(fin.Failure != nil && fin.Failure.Code != m.Finish.Failure.Code) {
			t.Errorf("%s seq %d: finish %+v, want %+v", filepath.Base(path), m.Seq, fin, m.Finish)
		}
		if m.Usage != nil {
			if u := a.Usage(); u == nil || *u != *m.Usage {
				t.Errorf("%s seq %d: usage %+v, want %+v", filepath.Base(path), m.Seq, u, m.Usage)
			}
		}
	}
	return len(want), exact
}

func TestReplayCorpusMessages(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"examples--acp-agent--bash-tool-turn--session.jsonl", "apps--web--cordis-tool-round--session.jsonl"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			replayed, exact := replayFile(t, filepath.Join("testdata", name))
			if replayed == 0 {
				t.Fatal("nothing replayed")
			}
			// The real recording reproduces the logged messages exactly;
			// the cordis fixture's messages disagree with its own chunks.
			if name == "examples--acp-agent--bash-tool-turn--session.jsonl" && exact != replayed {
				t.Fatalf("%d of %d messages reproduced exactly", exact, replayed)
			}
		})
	}
}

// TestReplayWholeCorpus replays all 77 recorded logs when the shared corpus
// is present (it lives outside the module, next to the design documents).
func TestReplayWholeCorpus(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob(filepath.Join(sharedCorpus, "*.jsonl"))
	if len(files) == 0 {
		if _, err := os.Stat(sharedCorpus); err != nil {
			t.Skipf("SKIPPED: shared corpus %s not present (%v); the testdata replay still runs", sharedCorpus, err)
		}
		t.Fatalf("no logs in %s", sharedCorpus)
	}
	total, exact := 0, 0
	for _, f := range files {
		n, e := replayFile(t, f)
		total, exact = total+n, exact+e
	}
	t.Logf("replayed %d recorded messages; %d equal the logged message exactly", total, exact)
	if total < 100 || exact < total-10 {
		t.Fatalf("replayed %d messages, %d exact", total, exact)
	}
}
