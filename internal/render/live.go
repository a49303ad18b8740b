package render

import (
	"context"
	"io"
	"sync"
	"time"

	"github.com/a-h/templ"

	"harness/internal/auth"
	"harness/internal/llm"
	"harness/internal/session"
	"harness/internal/ws"
)

// LogSource returns the in-memory log of a loaded session. The live
// renderer reads it to find a tool result's call, to sum a turn's usage and
// to build streaming markdown previews; without it those degrade (a card
// from its result alone, no turn total, no preview).
type LogSource func(sessionID string) (*session.Log, bool)

// DefaultPreviewInterval is the minimum time, in event time, between two
// markdown previews of a streaming text block (at most 4 per second).
const DefaultPreviewInterval = 250 * time.Millisecond

// Renderer renders session events as live fragments for the browser. It
// implements ws.Renderer and is safe for concurrent use (every connection's
// writer calls it).
type Renderer struct {
	md       *Markdown
	logs     LogSource
	context  ContextSource
	interval int64 // ms
	previews *previewCache
	turns    *usageCache
}

var _ ws.Renderer = (*Renderer)(nil)

// RendererOptions tune a Renderer.
type RendererOptions struct {
	// Logs reads loaded sessions' logs; nil disables what needs it.
	Logs LogSource
	// Context measures sessions for the header's context meter; nil sends
	// no meter updates.
	Context ContextSource
	// PreviewInterval overrides DefaultPreviewInterval.
	PreviewInterval time.Duration
}

// NewRenderer builds the live renderer.
func NewRenderer(md *Markdown, opts RendererOptions) *Renderer {
	iv := opts.PreviewInterval
	if iv <= 0 {
		iv = DefaultPreviewInterval
	}
	return &Renderer{md: md, logs: opts.Logs, context: opts.Context, interval: iv.Milliseconds(), previews: newPreviewCache(64), turns: newUsageCache(64)}
}

// Markdown is the renderer's markdown converter.
func (r *Renderer) Markdown() *Markdown { return r.md }

// Render returns the fragment of one event for one viewer ("" when the
// event changes nothing on the page, or when the browser applies it from
// the event itself: text and reasoning deltas).
func (r *Renderer) Render(ev session.Event, rc ws.RenderContext) (string, error) {
	f := newFragment()
	base := Base{Seq: ev.Seq, Time: ev.Time}
	var err error
	switch ev.Type {
	case session.TypeUserMessage:
		m, derr := session.Decode[llm.Message](ev)
		if derr != nil {
			return "", derr
		}
		viewer := ""
		if rc.Actor.IsUser() {
			viewer = rc.Actor.UserID
		}
		if it := UserMessageItem(base, m, viewer); it != nil {
			err = f.upsertItems(it)
		}
	case session.TypeAssistantChunk:
		return r.chunk(rc.Session, ev)
	case session.TypeAssistantMessage:
		am, derr := session.Decode[session.AssistantMessage](ev)
		if derr != nil {
			return "", derr
		}
		r.previews.forgetStep(rc.Session, am.Turn, am.Step)
		err = f.replacePrefix(blockPrefix(am.Turn, am.Step), r.md.MessageItems(base, am))
	case session.TypeToolCall:
		c, derr := session.Decode[session.ToolCall](ev)
		if derr != nil {
			return "", derr
		}
		err = f.upsertItems(ToolCallItem(base, c))
	case session.TypeToolOutput:
		o, derr := session.Decode[session.ToolOutput](ev)
		if derr != nil {
			return "", derr
		}
		f.appendText(ToolID(o.Turn, o.CallID)+"-out", o.Text)
	case session.TypeToolResult:
		res, derr := session.Decode[session.ToolResult](ev)
		if derr != nil {
			return "", derr
		}
		err = f.upsertItems(ApplyToolResult(base, r.callOf(rc.Session, ev), res))
	case session.TypeTodoWrite:
		tw, derr := session.Decode[session.TodoWrite](ev)
		if derr != nil {
			return "", derr
		}
		err = f.upsert(ParentDock, TodoDock(tw.Todos))
	case session.TypeApprovalAsked:
		a, derr := session.Decode[session.ApprovalAsked](ev)
		if derr != nil {
			return "", derr
		}
		err = f.upsertItems(&ApprovalItem{Base: withID(base, approvalID(a.ID)), ApprovalID: a.ID, ToolName: a.ToolName, CallID: a.CallID, Reason: a.Reason})
		if err == nil && canAnswer(rc) {
			err = f.upsert(ParentTakeover, ApprovalPanel(a.ID, a.ToolName, r.argumentsOf(rc.Session, ev.Seq, a.CallID), a.Reason, a.Preview))
		}
	case session.TypeApprovalDecided:
		d, derr := session.Decode[session.ApprovalDecided](ev)
		if derr != nil {
			return "", derr
		}
		err = f.fill(approvalID(d.ID)+"-state", ApprovalState(d.Outcome, actorName(d.By)))
		f.remove(PanelID(d.ID))
	case session.TypeQuestionAsked:
		q, derr := session.Decode[session.QuestionAsked](ev)
		if derr != nil {
			return "", derr
		}
		err = f.upsertItems(&QuestionItem{Base: withID(base, questionID(q.ID)), QuestionID: q.ID, Questions: q.Questions})
		if err == nil && canAnswer(rc) {
			err = f.upsert(ParentTakeover, QuestionPanel(q.ID, q.Questions))
		}
	case session.TypeQuestionAnswered:
		a, derr := session.Decode[session.QuestionAnswered](ev)
		if derr != nil {
			return "", derr
		}
		err = f.fill(questionID(a.ID)+"-state", QuestionState(a.Outcome, a.Answers, actorName(a.By)))
		f.remove(PanelID(a.ID))
	case session.TypeLLMRetry:
		rt, derr := session.Decode[session.LLMRetry](ev)
		if derr != nil {
			return "", derr
		}
		r.previews.forgetStep(rc.Session, rt.Turn, rt.Step)
		if err = f.replacePrefix(blockPrefix(rt.Turn, rt.Step), nil); err == nil {
			err = f.upsertItems(RetryRow(base, rt))
		}
	case session.TypeLLMRetryStarted:
		rs, derr := session.Decode[session.LLMRetryStarted](ev)
		if derr != nil {
			return "", derr
		}
		err = f.fill(retryID(rs.Turn, rs.Step)+"-state", RetryState(&RetryItem{Retry: rs.Retry, Started: true}))
	case session.TypeTurnEnd:
		te, derr := session.Decode[session.TurnEnd](ev)
		if derr != nil {
			return "", derr
		}
		var items []Item
		if tu := r.turnUsage(rc.Session, ev, te.Turn); tu != nil {
			items = append(items, tu)
		}
		if it := TurnEndItem(base, te); it != nil {
			items = append(items, it)
		}
		err = f.upsertItems(items...)
	case session.TypeCompactionSum:
		cs, derr := session.Decode[session.CompactionSummary](ev)
		if derr != nil {
			return "", derr
		}
		err = f.upsertItems(r.md.CompactionMarker(base, cs, r.compactionTrigger(rc.Session, ev.Seq, cs.CompactionID)))
	case session.TypePermissionMode, session.TypeModelSelected, session.TypeCompactionEnd,
		session.TypeWorkspaceReady, session.TypeWorkspaceFailed:
		if it := SettingNotice(base, ev); it != nil {
			err = f.upsertItems(it)
		}
	case session.TypeSessionTitle:
		t, derr := session.Decode[session.SessionTitle](ev)
		if derr != nil {
			return "", derr
		}
		err = f.fill("session-title", textComponent(t.Title))
	default:
		return "", nil
	}
	if err == nil {
		err = r.meter(f, rc.Session, ev.Type)
	}
	if err != nil {
		return "", err
	}
	return f.String(), nil
}

// meterEvents change the context meter: the surface grows or is replaced
// (user, assistant, tool result, a compaction's checkpoint) or the route's
// window changes.
var meterEvents = map[session.Type]bool{
	session.TypeUserMessage: true, session.TypeAssistantMessage: true, session.TypeToolResult: true,
	session.TypeCompactionEnd: true, session.TypeModelSelected: true,
}

// meter adds the current context meter after the events that change it.
// The figures are the session's as of now (the meter is incremental, and
// the source shares one measurement between subscribers).
func (r *Renderer) meter(f *fragment, sessionID string, t session.Type) error {
	if r.context == nil || !meterEvents[t] {
		return nil
	}
	c, ok := r.context(sessionID)
	if !ok {
		return nil
	}
	return f.upsert(ParentChatHead, ContextMeter(c))
}

// chunk renders stream chunks: a block's shell at block-start, its final
// form at block-end, and at most one markdown preview per interval while
// text streams. Deltas themselves are applied by the browser from the
// event.
func (r *Renderer) chunk(sessionID string, ev session.Event) (string, error) {
	c, err := session.Decode[session.AssistantChunk](ev)
	if err != nil {
		return "", err
	}
	base := Base{Seq: ev.Seq, Time: ev.Time}
	f := newFragment()
	switch c.Chunk.Type {
	case llm.ChunkBlockStart:
		if it := BlockStartItem(base, c); it != nil {
			err = f.upsertItems(it)
		}
	case llm.ChunkBlockEnd:
		r.previews.forget(previewKey{sessionID, c.Turn, c.Step, c.Chunk.Index})
		if it := r.md.BlockEndItem(base, c); it != nil {
			err = f.upsertItems(it)
		}
	case llm.ChunkTextDelta:
		html, ok := r.preview(sessionID, ev, c)
		if !ok {
			return "", nil
		}
		f.preview(BlockID(c.Turn, c.Step, c.Chunk.Index), ev.Seq, html)
	default:
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return f.String(), nil
}

// callOf finds the tool/call a live tool/result answers: its source seq.
func (r *Renderer) callOf(sessionID string, ev session.Event) *ToolItem {
	if r.logs == nil || len(ev.SourceEventSeqs) == 0 {
		return nil
	}
	l, ok := r.logs(sessionID)
	if !ok {
		return nil
	}
	callEv, ok := l.Event(ev.SourceEventSeqs[0])
	if !ok || callEv.Type != session.TypeToolCall {
		return nil
	}
	c, err := session.Decode[session.ToolCall](callEv)
	if err != nil {
		return nil
	}
	return ToolCallItem(Base{Seq: callEv.Seq, Time: callEv.Time}, c)
}

// canAnswer: the viewer may answer prompts (owner, admin, collaborator).
func canAnswer(rc ws.RenderContext) bool {
	switch rc.Role {
	case auth.SessionRoleOwner, auth.SessionRoleAdmin, auth.SessionRoleCollaborator:
		return rc.Actor.IsUser()
	}
	return false
}

// argumentsOf finds the arguments of tool call callID, logged shortly
// before the approval that asks about it.
func (r *Renderer) argumentsOf(sessionID string, from int64, callID string) string {
	if r.logs == nil || callID == "" {
		return ""
	}
	l, ok := r.logs(sessionID)
	if !ok {
		return ""
	}
	for seq := from - 1; seq >= 0 && seq >= from-256; seq-- {
		ev, ok := l.Event(seq)
		if !ok {
			return ""
		}
		if ev.Type == session.TypeToolCall {
			if c, err := session.Decode[session.ToolCall](ev); err == nil && c.CallID == callID {
				return c.Arguments
			}
		}
		if ev.Type == session.TypeStepStart {
			return ""
		}
	}
	return ""
}

// turnUsage sums the usage of the turn a turn/end closes, from the log.
func (r *Renderer) turnUsage(sessionID string, end session.Event, turn int) *UsageItem {
	if r.logs == nil {
		return nil
	}
	if u, ok := r.turns.get(sessionID, end.Seq); ok {
		return u
	}
	l, ok := r.logs(sessionID)
	if !ok {
		return nil
	}
	tu := &UsageItem{Base: Base{ID: turnUsageID(turn), Seq: end.Seq, Time: end.Time}, Turn: turn, TurnEnd: true}
	for seq := end.Seq - 1; seq >= 0; seq-- {
		ev, ok := l.Event(seq)
		if !ok {
			break
		}
		if ev.Type == session.TypeTurnStart {
			break
		}
		if ev.Type != session.TypeAssistantMessage {
			continue
		}
		am, err := session.Decode[session.AssistantMessage](ev)
		if err == nil && am.Turn == turn && am.Usage != nil {
			tu.Usage = tu.Usage.Add(*am.Usage)
			tu.Requests++
		}
	}
	if tu.Requests == 0 {
		tu = nil
	}
	r.turns.put(sessionID, end.Seq, tu)
	return tu
}

// textComponent renders escaped text.
func textComponent(s string) templ.Component {
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		_, err := io.WriteString(w, escapeText(s))
		return err
	})
}

// usageCache remembers computed turn totals by (session, seq), so every
// subscriber of a session shares one scan.
type usageCache struct {
	mu    sync.Mutex
	max   int
	m     map[usageKey]*UsageItem
	order []usageKey
}

type usageKey struct {
	session string
	seq     int64
}

func newUsageCache(n int) *usageCache { return &usageCache{max: n, m: map[usageKey]*UsageItem{}} }

func (c *usageCache) get(s string, seq int64) (*UsageItem, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	u, ok := c.m[usageKey{s, seq}]
	return u, ok
}

func (c *usageCache) put(s string, seq int64, u *UsageItem) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := usageKey{s, seq}
	if _, ok := c.m[k]; ok {
		return
	}
	c.m[k] = u
	c.order = append(c.order, k)
	if len(c.order) > c.max {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
}
