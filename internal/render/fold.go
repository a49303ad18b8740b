package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"harness/internal/llm"
	"harness/internal/session"
	"harness/internal/tools"
	"harness/internal/tools/builtin"
)

// maxLiveOutput bounds the tool/output text a page keeps per running tool
// card (a live page appends the output itself).
const maxLiveOutput = 64 << 10

// FoldOptions tune a fold.
type FoldOptions struct {
	// ViewerID is the user looking at the transcript: bubbles written by
	// someone else (shared sessions) show their author. Empty (share-link
	// viewers) shows every author.
	ViewerID string
	// AttachmentBase is the path the page reaches the session's images
	// under: "/sessions/<id>" for people (the default of a live
	// projection), "/s/<token>" on a share-link page. An image's URL is
	// AttachmentBase + "/attachments/" + its id.
	AttachmentBase string
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
	// Figures are the totals of the turns that ended on the page (the
	// footer shows the whole log's: FigureBook).
	Figures SessionFigures
	// Malformed counts the events skipped because their data did not
	// decode (the page shows the rest; a live Projection reports each as
	// an error from Apply).
	Malformed int
}

// Fold turns events (a contiguous run of a log, e.g. a history page) into
// transcript items, through the same projection the live fragments come
// from. Events it does not show are skipped; a malformed event is skipped
// too, never fatal, and counted in Transcript.Malformed.
func (m *Markdown) Fold(events []session.Event, opts FoldOptions) Transcript {
	p := newProjection(m, false)
	p.viewerID = opts.ViewerID
	p.attachBase = opts.AttachmentBase
	out := Transcript{First: -1, Last: -1}
	for _, ev := range events {
		if out.First < 0 {
			out.First = ev.Seq
		}
		out.Last = ev.Seq
		if p.apply(ev) != nil {
			out.Malformed++
		}
	}
	out.Items = p.finish()
	out.Todos, out.Usage, out.ContextWindow, out.Figures = p.todos, p.usage, p.window, p.totals
	return out
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
// attachBase prefixes the images' URLs (FoldOptions.AttachmentBase).
func UserMessageItem(base Base, m llm.Message, viewerID, attachBase string) *UserItem {
	if m.Source.Kind == llm.SourceAgent {
		// A subagent's task, written by its parent agent.
		return &UserItem{Base: withID(base, userID(m.ID)), Text: m.Text(), Author: "Task from the parent agent", ShowAuthor: true}
	}
	if m.Source.Kind != llm.SourceUser {
		return nil
	}
	it := &UserItem{Base: withID(base, userID(m.ID)), Text: m.Text(), Author: m.Source.Name,
		ShowAuthor: viewerID == "" || m.Source.UserID != viewerID, authorID: m.Source.UserID}
	for _, b := range m.Images() {
		it.Images = append(it.Images, ImageView{
			ID: b.Attachment, URL: attachmentURL(attachBase, b.Attachment),
			MediaType: b.MediaType, Name: b.Name, Size: b.Size, Width: b.Width, Height: b.Height,
		})
	}
	return it
}

// attachmentURL is where the page reaches a session attachment.
func attachmentURL(base, id string) string { return base + "/attachments/" + url.PathEscape(id) }

// resultImages are the images a tool stored with the session and listed
// in its result's meta (tools.MetaImages), for the card; none for a meta
// without them.
func resultImages(meta json.RawMessage, attachBase string) []ImageView {
	if len(meta) == 0 || !bytes.Contains(meta, []byte(`"images"`)) {
		return nil
	}
	var m tools.MetaImages
	if json.Unmarshal(meta, &m) != nil {
		return nil
	}
	var out []ImageView
	for _, im := range m.Images {
		if im.Attachment == "" {
			continue
		}
		out = append(out, ImageView{ID: im.Attachment, URL: attachmentURL(attachBase, im.Attachment),
			MediaType: im.MediaType, Size: im.Size, Width: im.Width, Height: im.Height})
	}
	return out
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
// hand (it precedes the page, or the window a live projection primed).
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
	case probe["subagent"] != nil:
		return "task"
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
		var m builtin.BashMeta
		if json.Unmarshal(meta, &m) == nil {
			t.Bash = &m
		}
	case "edit", "write":
		var m builtin.FileChangeMeta
		if json.Unmarshal(meta, &m) == nil {
			t.Change = &m
		}
	case "read":
		var m builtin.ReadMeta
		if json.Unmarshal(meta, &m) == nil {
			t.Read = &m
		}
	case "glob", "grep":
		var m builtin.SearchMeta
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
	case "task":
		if m, ok := subagentMeta(meta); ok {
			sv := t.subagentView()
			sv.Session, sv.Reason, sv.Usage, sv.Requests = m.Session, m.Reason, m.Usage, m.Requests
			if sv.Description == "" {
				sv.Description = m.Description
			}
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
		return &ErrorItem{Base: b, Turn: te.Turn, Code: string(f.Code), Status: f.Status, Message: safeMessage(f.Message)}
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
