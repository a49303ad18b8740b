package render

import (
	"encoding/json"
	"fmt"
	"strings"

	"harness/internal/llm"
	"harness/internal/session"
	"harness/internal/tools"
)

// maxLiveOutput bounds the live terminal output kept per tool card.
const maxLiveOutput = 64 << 10

// FoldOptions tune a fold.
type FoldOptions struct {
	// ViewerID is the user looking at the transcript: bubbles written by
	// someone else (shared sessions) show their author. Empty (share-link
	// viewers) shows every author.
	ViewerID string
}

// Transcript is a folded run of events.
type Transcript struct {
	Items []Item
	// First and Last are the seqs of the first and last folded events (-1
	// when none).
	First, Last int64
	// Todos is the last todo list written on the page (nil when none).
	Todos []session.Todo
	// Usage is the usage of the last model request on the page, for the
	// context meter; ContextWindow the last request/context's window.
	Usage         *llm.Usage
	ContextWindow int64
}

// folder accumulates items; index maps item ids to their position.
type folder struct {
	md    *Markdown
	opts  FoldOptions
	items []Item
	index map[string]int
	// turn usage sums per open turn.
	turnUsage map[int]*UsageItem
	// triggers of the compactions started on the page, by id.
	triggers map[string]CompactionTrigger
	// streams hold the text of streaming blocks by item id; the items get
	// it when the fold ends (appending to strings would be quadratic).
	streams map[string]*strings.Builder
	out     Transcript
}

// Fold turns events (a contiguous run of a log, e.g. a history page) into
// transcript items. Events it does not show are skipped; a malformed event
// is skipped too, never fatal.
func (m *Markdown) Fold(events []session.Event, opts FoldOptions) Transcript {
	f := &folder{md: m, opts: opts, index: map[string]int{}, turnUsage: map[int]*UsageItem{}, streams: map[string]*strings.Builder{}, triggers: map[string]CompactionTrigger{}}
	f.out.First, f.out.Last = -1, -1
	for _, ev := range events {
		if f.out.First < 0 {
			f.out.First = ev.Seq
		}
		f.out.Last = ev.Seq
		f.apply(ev)
	}
	// Drop holes left by removed items; streaming blocks get their text
	// and a markdown rendering as of now.
	items := f.items[:0]
	for _, it := range f.items {
		if it == nil {
			continue
		}
		if sb := f.streams[it.ItemID()]; sb != nil {
			switch v := it.(type) {
			case *ReasoningItem:
				v.Text = sb.String()
			case *TextItem:
				v.Raw = sb.String()
				v.HTML = m.Render(v.Raw)
			}
		}
		items = append(items, it)
	}
	f.out.Items = items
	return f.out
}

func (f *folder) add(it Item) {
	if i, ok := f.index[it.ItemID()]; ok {
		f.items[i] = it
		return
	}
	f.index[it.ItemID()] = len(f.items)
	f.items = append(f.items, it)
}

func (f *folder) get(id string) Item {
	if i, ok := f.index[id]; ok {
		return f.items[i]
	}
	return nil
}

// replacePrefix swaps every item whose id starts with prefix for repl,
// placed where the first of them was.
func (f *folder) replacePrefix(prefix string, repl []Item) {
	pos := -1
	for id, i := range f.index {
		if strings.HasPrefix(id, prefix) {
			if pos < 0 || i < pos {
				pos = i
			}
			f.items[i] = nil
			delete(f.index, id)
		}
	}
	if pos < 0 {
		for _, it := range repl {
			f.add(it)
		}
		return
	}
	// Put the first replacement in the first slot and insert the others
	// after it.
	tail := append([]Item(nil), f.items[pos+1:]...)
	f.items = f.items[:pos]
	for _, it := range repl {
		f.index[it.ItemID()] = len(f.items)
		f.items = append(f.items, it)
	}
	for _, it := range tail {
		if it != nil {
			f.index[it.ItemID()] = len(f.items)
		}
		f.items = append(f.items, it)
	}
}

func (f *folder) apply(ev session.Event) {
	base := Base{Seq: ev.Seq, Time: ev.Time}
	switch ev.Type {
	case session.TypeUserMessage:
		m, err := session.Decode[llm.Message](ev)
		if err != nil {
			return
		}
		if it := UserMessageItem(base, m, f.opts.ViewerID); it != nil {
			f.add(it)
		}
	case session.TypeAssistantChunk:
		c, err := session.Decode[session.AssistantChunk](ev)
		if err == nil {
			f.chunk(base, c)
		}
	case session.TypeAssistantMessage:
		am, err := session.Decode[session.AssistantMessage](ev)
		if err != nil {
			return
		}
		f.dropStreams(blockPrefix(am.Turn, am.Step))
		f.replacePrefix(blockPrefix(am.Turn, am.Step), f.md.MessageItems(base, am))
		if am.Usage != nil {
			u := *am.Usage
			f.out.Usage = &u
			tu := f.turnUsage[am.Turn]
			if tu == nil {
				tu = &UsageItem{Turn: am.Turn, TurnEnd: true}
				f.turnUsage[am.Turn] = tu
			}
			tu.Usage = tu.Usage.Add(u)
			tu.Requests++
		}
	case session.TypeToolCall:
		c, err := session.Decode[session.ToolCall](ev)
		if err == nil {
			f.add(ToolCallItem(base, c))
		}
	case session.TypeToolOutput:
		o, err := session.Decode[session.ToolOutput](ev)
		if err != nil {
			return
		}
		if t, ok := f.get(ToolID(o.Turn, o.CallID)).(*ToolItem); ok {
			t.Output = tailText(t.Output+o.Text, maxLiveOutput)
		}
	case session.TypeToolResult:
		r, err := session.Decode[session.ToolResult](ev)
		if err != nil {
			return
		}
		id := ToolID(r.Turn, r.Message.Source.CallID)
		t, _ := f.get(id).(*ToolItem)
		f.add(ApplyToolResult(base, t, r))
	case session.TypeTodoWrite:
		tw, err := session.Decode[session.TodoWrite](ev)
		if err == nil {
			f.out.Todos = tw.Todos
		}
	case session.TypeApprovalAsked:
		a, err := session.Decode[session.ApprovalAsked](ev)
		if err == nil {
			f.add(&ApprovalItem{Base: withID(base, approvalID(a.ID)), ApprovalID: a.ID, ToolName: a.ToolName, CallID: a.CallID, Reason: a.Reason})
		}
	case session.TypeApprovalDecided:
		d, err := session.Decode[session.ApprovalDecided](ev)
		if err != nil {
			return
		}
		if a, ok := f.get(approvalID(d.ID)).(*ApprovalItem); ok {
			a.Outcome, a.By = d.Outcome, actorName(d.By)
		}
	case session.TypeQuestionAsked:
		q, err := session.Decode[session.QuestionAsked](ev)
		if err == nil {
			f.add(&QuestionItem{Base: withID(base, questionID(q.ID)), QuestionID: q.ID, Questions: q.Questions})
		}
	case session.TypeQuestionAnswered:
		a, err := session.Decode[session.QuestionAnswered](ev)
		if err != nil {
			return
		}
		if q, ok := f.get(questionID(a.ID)).(*QuestionItem); ok {
			q.Outcome, q.Answers, q.By = a.Outcome, a.Answers, actorName(a.By)
		}
	case session.TypeLLMRetry:
		r, err := session.Decode[session.LLMRetry](ev)
		if err != nil {
			return
		}
		// The failed attempt's partial blocks are gone from the model's
		// view; the retry row takes their place.
		f.dropStreams(blockPrefix(r.Turn, r.Step))
		f.replacePrefix(blockPrefix(r.Turn, r.Step), nil)
		f.add(RetryRow(base, r))
	case session.TypeLLMRetryStarted:
		r, err := session.Decode[session.LLMRetryStarted](ev)
		if err != nil {
			return
		}
		if it, ok := f.get(retryID(r.Turn, r.Step)).(*RetryItem); ok {
			it.Started = true
		}
	case session.TypeTurnEnd:
		te, err := session.Decode[session.TurnEnd](ev)
		if err != nil {
			return
		}
		if tu := f.turnUsage[te.Turn]; tu != nil {
			tu.Base = withID(base, turnUsageID(te.Turn))
			f.add(tu)
			delete(f.turnUsage, te.Turn)
		}
		if it := TurnEndItem(base, te); it != nil {
			f.add(it)
		}
	case session.TypeRequestContext:
		rc, err := session.Decode[session.RequestContext](ev)
		if err == nil && rc.ContextWindow > 0 {
			f.out.ContextWindow = rc.ContextWindow
		}
	case session.TypeCompactionStart:
		cs, err := session.Decode[session.CompactionStart](ev)
		if err == nil {
			f.triggers[cs.CompactionID] = triggerOf(cs)
		}
	case session.TypeCompactionSum:
		cs, err := session.Decode[session.CompactionSummary](ev)
		if err == nil {
			f.add(f.md.CompactionMarker(base, cs, f.triggers[cs.CompactionID]))
		}
	case session.TypePermissionMode, session.TypeModelSelected, session.TypeCompactionEnd,
		session.TypeWorkspaceReady, session.TypeWorkspaceFailed:
		if it := SettingNotice(base, ev); it != nil {
			f.add(it)
		}
	}
}

// chunk folds one stream chunk into the step's live blocks.
func (f *folder) chunk(base Base, c session.AssistantChunk) {
	id := BlockID(c.Turn, c.Step, c.Chunk.Index)
	switch c.Chunk.Type {
	case llm.ChunkBlockStart:
		if it := BlockStartItem(base, c); it != nil {
			f.add(it)
			f.streams[id] = &strings.Builder{}
		}
	case llm.ChunkReasoningDelta, llm.ChunkTextDelta:
		if sb := f.streams[id]; sb != nil {
			sb.WriteString(c.Chunk.Text)
		}
	case llm.ChunkBlockEnd:
		if it := f.md.BlockEndItem(base, c); it != nil {
			if old := f.get(id); old != nil {
				it = withSeqOf(it, old)
			}
			f.add(it)
			delete(f.streams, id)
		}
	}
}

func (f *folder) dropStreams(prefix string) {
	for id := range f.streams {
		if strings.HasPrefix(id, prefix) {
			delete(f.streams, id)
		}
	}
}

func withID(b Base, id string) Base { b.ID = id; return b }

// withSeqOf keeps the seq of the item it replaces (the block-start's), so
// paging cursors stay put.
func withSeqOf(it, old Item) Item {
	switch v := it.(type) {
	case *TextItem:
		v.Seq = old.ItemSeq()
	case *ReasoningItem:
		v.Seq = old.ItemSeq()
	case *ToolCallDraftItem:
		v.Seq = old.ItemSeq()
	}
	return it
}

func actorName(a *session.Actor) string {
	if a == nil {
		return ""
	}
	return a.Name
}

// UserMessageItem is the item of a user/message event, or nil for
// messages not shown (runtime context, tool context, permission notes, and
// compaction checkpoints, whose marker comes from compaction/summary).
func UserMessageItem(base Base, m llm.Message, viewerID string) Item {
	if m.Source.Kind != llm.SourceUser {
		return nil
	}
	return &UserItem{Base: withID(base, userID(m.ID)), Text: m.Text(), Author: m.Source.Name,
		ShowAuthor: viewerID == "" || m.Source.UserID != viewerID}
}

// BlockStartItem is the empty streaming item a block-start chunk opens.
func BlockStartItem(base Base, c session.AssistantChunk) Item {
	b := withID(base, BlockID(c.Turn, c.Step, c.Chunk.Index))
	switch c.Chunk.BlockType {
	case llm.BlockReasoning:
		return &ReasoningItem{Base: b, Streaming: true}
	case llm.BlockText:
		return &TextItem{Base: b, Streaming: true}
	case llm.BlockToolCall:
		return &ToolCallDraftItem{Base: b, Name: c.Chunk.Name}
	}
	return nil
}

// BlockEndItem is the final form of a block at its block-end chunk.
func (m *Markdown) BlockEndItem(base Base, c session.AssistantChunk) Item {
	b := withID(base, BlockID(c.Turn, c.Step, c.Chunk.Index))
	if c.Chunk.Block == nil {
		return nil
	}
	switch blk := c.Chunk.Block; blk.Type {
	case llm.BlockReasoning:
		return &ReasoningItem{Base: b, Text: blk.Text}
	case llm.BlockText:
		return &TextItem{Base: b, Raw: blk.Text, HTML: m.Render(blk.Text)}
	case llm.BlockToolCall:
		return &ToolCallDraftItem{Base: b, Name: blk.Name}
	}
	return nil
}

// MessageItems are the items of a finished (or interrupted) assistant
// message: its reasoning and text blocks, then an interruption notice.
// Tool-call blocks become tool cards at tool/call; usage is summed per turn.
func (m *Markdown) MessageItems(base Base, am session.AssistantMessage) []Item {
	var out []Item
	for i, blk := range am.Message.Content {
		b := withID(base, BlockID(am.Turn, am.Step, i))
		switch blk.Type {
		case llm.BlockReasoning:
			if strings.TrimSpace(blk.Text) != "" {
				out = append(out, &ReasoningItem{Base: b, Text: blk.Text})
			}
		case llm.BlockText:
			if strings.TrimSpace(blk.Text) != "" {
				out = append(out, &TextItem{Base: b, Raw: blk.Text, HTML: m.Render(blk.Text)})
			}
		}
	}
	if am.Interrupted {
		out = append(out, &NoticeItem{Base: withID(base, BlockID(am.Turn, am.Step, 9999)), Kind: NoticeInterrupt, Text: "Stopped — the partial answer above was kept."})
	}
	return out
}

// ToolCallItem is a running tool card.
func ToolCallItem(base Base, c session.ToolCall) *ToolItem {
	return &ToolItem{Base: withID(base, ToolID(c.Turn, c.CallID)), Turn: c.Turn, CallID: c.CallID, Name: c.Name, Arguments: c.Arguments, Status: ToolRunning}
}

// ApplyToolResult completes the card t (nil when its call is unknown: the
// card is built from the result alone).
func ApplyToolResult(base Base, t *ToolItem, r session.ToolResult) *ToolItem {
	callID := r.Message.Source.CallID
	if t == nil {
		t = &ToolItem{Base: withID(base, ToolID(r.Turn, callID)), Turn: r.Turn, CallID: callID}
	} else {
		cp := *t
		t = &cp
	}
	var block llm.ContentBlock
	if len(r.Message.Content) > 0 {
		block = r.Message.Content[0]
	}
	var sb strings.Builder
	for _, c := range block.Content {
		if c.Type == llm.BlockText {
			sb.WriteString(c.Text)
		}
	}
	t.Result = sb.String()
	t.Output = ""
	t.Status = ToolOK
	if block.IsError || r.Error != nil {
		t.Status = ToolFailed
	}
	if r.Error != nil {
		t.ErrorCode = r.Error.Code
		switch r.Error.Code {
		case session.CodeAbortedBeforeDispatch, session.CodeToolAborted, session.CodeToolNotStarted:
			t.Status = ToolAborted
		}
	}
	if t.Name == "" {
		t.Name = sniffTool(r.Meta)
	}
	applyMeta(t, r.Meta)
	return t
}

// sniffTool guesses a tool from its result meta when the call is not at
// hand (a live result whose call the renderer cannot see).
func sniffTool(meta json.RawMessage) string {
	var probe map[string]json.RawMessage
	if len(meta) == 0 || json.Unmarshal(meta, &probe) != nil {
		return "tool"
	}
	switch {
	case probe["durationMs"] != nil:
		return "bash"
	case probe["diff"] != nil:
		return "edit"
	case probe["totalLines"] != nil:
		return "read"
	case probe["pattern"] != nil:
		return "grep"
	case probe["todos"] != nil:
		return "todo_write"
	case probe["questions"] != nil:
		return "ask_user"
	}
	return "tool"
}

// applyMeta decodes the result meta the card's tool produces.
func applyMeta(t *ToolItem, meta json.RawMessage) {
	if len(meta) == 0 {
		return
	}
	switch t.Name {
	case "bash":
		var m tools.BashMeta
		if json.Unmarshal(meta, &m) == nil {
			t.Bash = &m
		}
	case "edit", "write":
		var m tools.FileChangeMeta
		if json.Unmarshal(meta, &m) == nil {
			t.Change = &m
		}
	case "read":
		var m tools.ReadMeta
		if json.Unmarshal(meta, &m) == nil {
			t.Read = &m
		}
	case "glob", "grep":
		var m tools.SearchMeta
		if json.Unmarshal(meta, &m) == nil {
			t.Search = &m
		}
	case "todo_write":
		var m session.TodoWrite
		if json.Unmarshal(meta, &m) == nil {
			t.Todos = m.Todos
		}
	case "ask_user":
		var m AskMeta
		if json.Unmarshal(meta, &m) == nil {
			t.Asked = &m
		}
	}
}

// RetryRow is the row of an llm/retry event.
func RetryRow(base Base, r session.LLMRetry) *RetryItem {
	return &RetryItem{
		Base: withID(base, retryID(r.Turn, r.Step)), Retry: r.Retry, MaxRetries: r.MaxRetries,
		Until: base.Time + r.DelayMs, Code: string(r.Failure.Code), Message: safeMessage(r.Failure.Message),
	}
}

// TurnEndItem is the row a turn/end shows, or nil for a plain completion.
func TurnEndItem(base Base, te session.TurnEnd) Item {
	b := withID(base, seqID("e", base.Seq))
	switch te.Reason.Kind {
	case session.ReasonError:
		f := te.Reason.Error
		if f == nil {
			f = &llm.Failure{Code: llm.CodeUnknown, Message: "The turn ended with an error."}
		}
		return &ErrorItem{Base: b, Code: string(f.Code), Status: f.Status, Message: safeMessage(f.Message)}
	case session.ReasonAborted:
		text := "Stopped."
		if c := te.Reason.Cause; c != nil {
			switch c.Kind {
			case session.CauseUser:
				text = "Stopped by the user."
			case session.CauseShutdown:
				text = "Stopped: the server shut down."
			}
		}
		return &NoticeItem{Base: b, Kind: NoticeAborted, Text: text}
	case session.ReasonMaxTokens:
		return &NoticeItem{Base: b, Kind: NoticeMaxTokens, Text: "The answer hit the output token limit. Send “continue” to let the model go on."}
	case session.ReasonBlocked:
		return &NoticeItem{Base: b, Kind: NoticeBlocked, Text: "The turn was blocked before it started."}
	case session.ReasonInterrupted:
		return &NoticeItem{Base: b, Kind: NoticeInterrupted, Text: "Interrupted: the server stopped while this turn ran."}
	}
	return nil
}

// SettingNotice is the notice of a mode, model or compaction event.
func SettingNotice(base Base, ev session.Event) Item {
	b := withID(base, seqID("n", base.Seq))
	switch ev.Type {
	case session.TypePermissionMode:
		m, err := session.Decode[session.PermissionModeSet](ev)
		if err != nil {
			return nil
		}
		return &NoticeItem{Base: b, Kind: NoticeMode, Text: "Permission mode: " + string(m.Mode) + byText(actorName(m.By))}
	case session.TypeModelSelected:
		m, err := session.Decode[session.ModelSelected](ev)
		if err != nil {
			return nil
		}
		return &NoticeItem{Base: b, Kind: NoticeModel, Text: "Model: " + m.Provider + " / " + m.Model + byText(actorName(m.By))}
	case session.TypeCompactionEnd:
		c, err := session.Decode[session.CompactionEnd](ev)
		if err != nil || c.Error == "" {
			return nil
		}
		return &NoticeItem{Base: b, Kind: NoticeCompaction, Text: "Compaction failed: " + safeMessage(c.Error)}
	case session.TypeWorkspaceReady:
		w, err := session.Decode[session.WorkspaceReady](ev)
		if err != nil {
			return nil
		}
		return &NoticeItem{Base: b, Kind: NoticeWorkspace, Text: workspaceReadyText(w)}
	case session.TypeWorkspaceFailed:
		w, err := session.Decode[session.WorkspaceFailed](ev)
		if err != nil {
			return nil
		}
		return &NoticeItem{Base: b, Kind: NoticeWorkspaceKO, Text: "The workspace could not be prepared: " + w.Error + " The session goes on in an empty workspace."}
	}
	return nil
}

// workspaceReadyText says how a workspace was prepared.
func workspaceReadyText(w session.WorkspaceReady) string {
	size := fmt.Sprintf("%d files, %s", w.Files, byteSize(w.Bytes))
	switch w.Kind {
	case "clone":
		at := ""
		if len(w.Commit) >= 12 {
			at = " at " + w.Commit[:12]
		}
		if w.Branch != "" {
			at = " (" + w.Branch + ")" + at
		}
		return "Workspace cloned from " + w.Source + at + ": " + size + "."
	case "fork":
		if w.Copied != nil && !*w.Copied {
			return "The parent's workspace was not copied: " + w.Note + ". This fork starts with an empty workspace."
		}
		return "Workspace copied from the parent session: " + size + ", links kept as links."
	}
	return "Workspace ready: " + size + "."
}

// byteSize formats a byte count for notices.
func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
