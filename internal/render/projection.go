package render

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/a-h/templ"

	"harness/internal/compact"
	"harness/internal/llm"
	"harness/internal/session"
)

// DefaultPreviewInterval is the minimum time, in event time, between two
// markdown previews of a streaming text block (at most 4 per second).
const DefaultPreviewInterval = 250 * time.Millisecond

// maxPrime bounds how far back NewProjection reads the log for the state
// of the current turn. A turn longer than this primes from its tail only:
// a tool result whose call is older gets a card from the result alone, the
// turn's usage sums the requests in reach, and a text block whose start is
// out of reach streams without markdown previews.
const maxPrime = 8192

// ProjectionOptions tune a live Projection.
type ProjectionOptions struct {
	// Meter upserts the header's context meter at the events that change
	// it (user/assistant message, tool result, compaction end, model
	// selected, request context), measured from the events alone: the
	// projection folds the whole log for it (compact.Fold), and the window
	// is the one the latest request/context or model/selected carries.
	// false: no meter fragments.
	Meter bool
	// PreviewInterval overrides DefaultPreviewInterval.
	PreviewInterval time.Duration
	// ModelLabel names the route a model/selected event picks, for the
	// header's model label (upserted into #chat-head). nil: no label
	// fragment (the notice row still shows the change).
	ModelLabel ModelLabelFunc
	// Figures are the session's figures as of the turn/end at seq (see
	// SessionFigures; a FigureBook keeps them), for the footer upserted
	// at every turn end. nil: no footer fragments.
	Figures func(seq int64) (SessionFigures, bool)
}

// Projection is the one projection of a session log onto the page: the
// switch in apply decodes each event once and turns it into transcript
// items (the fold) and, for a live projection, into the DOM operations
// that bring a page showing the items before the event to the items after
// it (the fragment). Markdown.Fold runs a page projection over a run of
// events and keeps its items; NewProjection builds a live projection that
// follows a session event by event and keeps only what later events of the
// current turn address.
//
// A Projection is used by one goroutine at a time (the session topic's
// projector), so it has no locks.
type Projection struct {
	md *Markdown
	id string // the session, for errors
	// live projections record fragment operations, forget finished turns
	// and mark preview points; page projections keep every item;
	// figures-only projections (a FigureBook's) build no items at all.
	live        bool
	figuresOnly bool
	viewerID    string       // page: the viewer the user bubbles are built for
	attachBase  string       // the images' URL prefix (FoldOptions.AttachmentBase)
	log         *session.Log // earlier events, for the meter's lookups
	measure     bool
	label       ModelLabelFunc
	figures     func(seq int64) (SessionFigures, bool)
	interval    int64 // preview interval, ms

	// The fold.
	items []Item
	index map[string]int // item id → position in items
	// turnUsage sums the figures of the open turns; turnClock times their
	// model requests and tool calls.
	turnUsage map[int]*UsageItem
	turnClock map[int]*turnClock
	// totals sums the figures of the turns that ended (SessionFigures).
	totals SessionFigures
	// triggers of the compactions started, by id.
	triggers map[string]CompactionTrigger
	// streams hold the text of the streaming blocks by item id (a builder,
	// since appending to the items' strings would be quadratic).
	streams map[string]*stream
	// callArgs are the arguments of the current step's tool calls by call
	// id (live: the approval panel shows them).
	callArgs map[string]string
	todos    []session.Todo
	usage    *llm.Usage
	window   int64
	// The meter's fold and window (ProjectionOptions.Meter).
	ctxFold   compact.Fold
	ctxWindow int64

	// The last applied event's change (live).
	ops []op
	// author is the user bubble the event added (its author line depends
	// on the viewer); panel is set when an op is for those who may answer.
	author *UserItem
	panel  bool
	meter  *ContextFigures
	footer *SessionFigures
	// frags caches the fragment per viewer class: bit 0 panels shown, bit
	// 1 author shown.
	frags [4]cachedFragment
}

// turnClock times an open turn's current model request (from its
// step/start or llm/retry-started) and its running tool calls.
type turnClock struct {
	reqOpen  bool
	reqStart int64
	// reqFirst is the time of the request's first delta, when streamed.
	reqFirst int64
	streamed bool
	tools    map[string]int64 // call id → its tool/call's time
}

type stream struct {
	sb strings.Builder
	// lastPoint is the event time of the block's last preview point (its
	// start at first).
	lastPoint int64
}

type cachedFragment struct {
	done bool
	html string
	err  error
}

func newProjection(md *Markdown, live bool) *Projection {
	return &Projection{
		md: md, live: live, interval: DefaultPreviewInterval.Milliseconds(),
		index: map[string]int{}, turnUsage: map[int]*UsageItem{}, turnClock: map[int]*turnClock{}, triggers: map[string]CompactionTrigger{},
		streams: map[string]*stream{}, callArgs: map[string]string{},
	}
}

// NewProjection primes a projection of session id from its in-memory log:
// it folds what the live fragments of later events need (the current turn:
// tool calls, approvals' arguments, the turn's usage, compaction triggers,
// streaming blocks) from the events before upto (exclusive), reading back
// to the last turn/start and at most maxPrime events, never the whole of a
// long log. l may be nil (nothing primed).
func NewProjection(md *Markdown, id string, l *session.Log, upto int64, opts ProjectionOptions) *Projection {
	p := newProjection(md, true)
	p.id, p.measure, p.label, p.figures = id, opts.Meter, opts.ModelLabel, opts.Figures
	// Live fragments go to every viewer of the topic alike: images are
	// linked as people reach them; a share-link page rewrites the prefix
	// to its own (transcript.js).
	p.attachBase = "/sessions/" + url.PathEscape(id)
	if opts.PreviewInterval > 0 {
		p.interval = opts.PreviewInterval.Milliseconds()
	}
	if l == nil {
		return p
	}
	p.log = l
	upto = min(upto, l.Len())
	if p.measure {
		p.primeMeter(l, upto)
	}
	from := upto - 1
	for ; from > 0 && from > upto-maxPrime; from-- {
		ev, ok := l.Event(from)
		if !ok || ev.Type == session.TypeTurnStart {
			break
		}
	}
	const page = 512
	for s := max(from, 0); s < upto; s += page {
		for _, ev := range l.Events(s, min(s+page, upto)) {
			// A malformed event was reported when it was applied live;
			// priming skips it as the page fold does.
			_ = p.apply(ev)
		}
	}
	p.ops = p.ops[:0]
	return p
}

// Apply folds the next event (events arrive in seq order, each once). A
// malformed event is an error and shows nothing (its Fragment is "").
func (p *Projection) Apply(ev session.Event) error {
	p.ops, p.author, p.panel, p.meter, p.footer = p.ops[:0], nil, false, nil, nil
	p.frags = [4]cachedFragment{}
	if p.measure {
		// Every event, as priming folds them, malformed or not.
		p.foldMeter(ev)
	}
	if err := p.apply(ev); err != nil {
		p.ops, p.author, p.panel = p.ops[:0], nil, false
		// The decode error names the event's type and seq.
		return fmt.Errorf("render: session %s: %w", p.id, err)
	}
	if p.measure && meterEvents[ev.Type] {
		// As of this event, whenever it is applied; once for every viewer.
		p.meter = &ContextFigures{Tokens: p.ctxFold.Tokens(), Window: p.ctxWindow}
	}
	if p.figures != nil && ev.Type == session.TypeTurnEnd {
		// Once per turn, never per chunk: the footer counts ended turns.
		if f, ok := p.figures(ev.Seq); ok {
			p.footer = &f
		}
	}
	return nil
}

// Fragment is the live HTML of the last applied event for one viewer
// class: canAnswer (the viewer may answer approvals and questions: it gets
// the takeover panels) and viewerID (the user looking; "" for share-link
// viewers; user bubbles written by someone else show their author). It is
// "" when the event changes nothing on the page, or when the browser
// applies it from the event itself (text and reasoning deltas between
// preview points). It reads nothing but the projection and renders each
// distinct class once per event.
func (p *Projection) Fragment(canAnswer bool, viewerID string) (string, error) {
	k := 0
	if canAnswer && p.panel {
		k |= 1
	}
	if p.author != nil && (viewerID == "" || p.author.authorID != viewerID) {
		k |= 2
	}
	c := &p.frags[k]
	if !c.done {
		c.html, c.err = p.render(k&1 != 0, k&2 != 0)
		c.done = true
	}
	return c.html, c.err
}

// meterEvents change the context meter: the surface grows or is replaced
// (user, assistant, tool result, a compaction's checkpoint) or the route's
// window changes.
var meterEvents = map[session.Type]bool{
	session.TypeUserMessage: true, session.TypeAssistantMessage: true, session.TypeToolResult: true,
	session.TypeCompactionEnd: true, session.TypeModelSelected: true, session.TypeRequestContext: true,
}

// primeMeter folds the events before upto into the meter: all of them,
// since the surface goes back to the session's start.
func (p *Projection) primeMeter(l *session.Log, upto int64) {
	const page = 512
	for s := int64(0); s < upto; s += page {
		for _, ev := range l.Events(s, min(s+page, upto)) {
			p.foldMeter(ev)
		}
	}
}

// foldMeter folds ev into the meter's figures: the surface, and the
// window a request/context or model/selected carries. Lookups read
// earlier events only, which never change.
func (p *Projection) foldMeter(ev session.Event) {
	var lookup func(int64) (session.Event, bool)
	if l := p.log; l != nil {
		lookup = func(seq int64) (session.Event, bool) {
			if seq >= ev.Seq {
				return session.Event{}, false
			}
			return l.Event(seq)
		}
	}
	p.ctxFold.Apply(ev, lookup)
	switch ev.Type {
	case session.TypeRequestContext:
		if rc, err := session.Decode[session.RequestContext](ev); err == nil {
			p.ctxWindow = rc.ContextWindow
		}
	case session.TypeModelSelected:
		if m, err := session.Decode[session.ModelSelected](ev); err == nil {
			p.ctxWindow = m.ContextWindow
		}
	}
}

// apply is the one switch over event types: one decode, the items the
// event changes, and the operations that show the change live.
func (p *Projection) apply(ev session.Event) error {
	if p.figuresOnly && !figureEvents[ev.Type] {
		return nil
	}
	base := Base{Seq: ev.Seq, Time: ev.Time}
	switch ev.Type {
	case session.TypeTurnStart:
		ts, err := session.Decode[session.TurnStart](ev)
		if err != nil {
			return err
		}
		if p.live {
			p.forgetTurns()
		}
		tu := p.turnFigures(ts.Turn)
		tu.startedAt, tu.HasDuration = ev.Time, true
	case session.TypeStepStart:
		clear(p.callArgs)
		sb, err := session.Decode[session.StepBoundary](ev)
		if err != nil {
			return err
		}
		p.turnFigures(sb.Turn).Figures.Steps++
		p.requestStarted(sb.Turn, ev.Time)
	case session.TypeUserMessage:
		m, err := session.Decode[llm.Message](ev)
		if err != nil {
			return err
		}
		if it := UserMessageItem(base, m, p.viewerID, p.attachBase); it != nil {
			p.add(it)
			p.author = it
			p.upsert(it)
		}
	case session.TypeAssistantChunk:
		if p.figuresOnly && !p.awaitingToken() {
			// Only a request's first delta counts: the rest of a stream
			// is not even decoded.
			return nil
		}
		c, err := session.Decode[session.AssistantChunk](ev)
		if err != nil {
			return err
		}
		p.chunk(base, c)
	case session.TypeAssistantMessage:
		am, err := session.Decode[session.AssistantMessage](ev)
		if err != nil {
			return err
		}
		if !p.figuresOnly {
			prefix := blockPrefix(am.Turn, am.Step)
			items := p.md.MessageItems(base, am)
			p.dropStreams(prefix)
			p.replacePrefix(prefix, items)
			p.emit(op{kind: opReplacePrefix, target: prefix, items: items})
		}
		p.requestEnded(am.Turn, ev.Time, am.Usage)
		if am.Usage != nil {
			u := *am.Usage
			p.usage = &u
			tu := p.turnFigures(am.Turn)
			tu.Usage = tu.Usage.Add(u)
			tu.Requests++
			if am.Price != nil {
				tu.Cost += am.Price.Cost(u)
				tu.Priced++
			}
		}
	case session.TypeToolCall:
		c, err := session.Decode[session.ToolCall](ev)
		if err != nil {
			return err
		}
		p.toolStarted(c.Turn, c.CallID, ev.Time)
		if p.figuresOnly {
			return nil
		}
		it := ToolCallItem(base, c)
		p.add(it)
		if p.live && c.CallID != "" {
			p.callArgs[c.CallID] = c.Arguments
		}
		p.upsert(it)
	case session.TypeToolOutput:
		o, err := session.Decode[session.ToolOutput](ev)
		if err != nil {
			return err
		}
		id := ToolID(o.Turn, o.CallID)
		if p.live {
			// The page appends the text to the card's terminal; the
			// result replaces the card, so the live fold keeps no copy.
			p.emit(op{kind: opAppendText, target: id + "-out", text: o.Text})
		} else if t, ok := p.get(id).(*ToolItem); ok {
			t.Output = tailText(t.Output+o.Text, maxLiveOutput)
		}
	case session.TypeToolResult:
		r, err := session.Decode[session.ToolResult](ev)
		if err != nil {
			return err
		}
		p.toolEnded(r.Turn, r.Message.Source.CallID, ev.Time)
		if m, ok := subagentMeta(r.Meta); ok && m.Usage != nil {
			// A subagent's requests are the parent turn's too: its usage
			// row and the session figures count them.
			tu := p.turnFigures(r.Turn)
			tu.Usage = tu.Usage.Add(*m.Usage)
			tu.Requests += m.Requests
			tu.Cost += m.Cost
			tu.Priced += m.Priced
		}
		if p.figuresOnly {
			return nil
		}
		t, _ := p.get(ToolID(r.Turn, r.Message.Source.CallID)).(*ToolItem)
		it := ApplyToolResult(base, t, r)
		it.Images = resultImages(r.Meta, p.attachBase)
		p.add(it)
		p.upsert(it)
	case session.TypeSubagentStarted:
		s, err := session.Decode[session.SubagentStarted](ev)
		if err != nil {
			return err
		}
		t, _ := p.get(ToolID(s.Turn, s.CallID)).(*ToolItem)
		it := subagentStarted(base, t, s)
		p.add(it)
		p.upsert(it)
	case session.TypeTodoWrite:
		tw, err := session.Decode[session.TodoWrite](ev)
		if err != nil {
			return err
		}
		p.todos = tw.Todos
		p.emit(op{kind: opUpsertIn, target: ParentDock, comp: TodoDock(tw.Todos)})
	case session.TypeApprovalAsked:
		a, err := session.Decode[session.ApprovalAsked](ev)
		if err != nil {
			return err
		}
		it := &ApprovalItem{Base: withID(base, approvalID(a.ID)), ApprovalID: a.ID, ToolName: a.ToolName, CallID: a.CallID, Reason: a.Reason}
		p.add(it)
		p.upsert(it)
		if p.live {
			p.emit(op{kind: opPanel, comp: ApprovalPanel(a.ID, a.ToolName, p.callArgs[a.CallID], a.Reason, a.Preview)})
			p.panel = true
		}
	case session.TypeApprovalDecided:
		d, err := session.Decode[session.ApprovalDecided](ev)
		if err != nil {
			return err
		}
		if a, ok := p.get(approvalID(d.ID)).(*ApprovalItem); ok {
			a.Outcome, a.By = d.Outcome, actorName(d.By)
		}
		p.emit(op{kind: opFill, target: approvalID(d.ID) + "-state", comp: ApprovalState(d.Outcome, actorName(d.By))})
		p.emit(op{kind: opRemove, target: PanelID(d.ID)})
	case session.TypeQuestionAsked:
		q, err := session.Decode[session.QuestionAsked](ev)
		if err != nil {
			return err
		}
		it := &QuestionItem{Base: withID(base, questionID(q.ID)), QuestionID: q.ID, Questions: q.Questions}
		p.add(it)
		p.upsert(it)
		if p.live {
			p.emit(op{kind: opPanel, comp: QuestionPanel(q.ID, q.Questions)})
			p.panel = true
		}
	case session.TypeQuestionAnswered:
		a, err := session.Decode[session.QuestionAnswered](ev)
		if err != nil {
			return err
		}
		if q, ok := p.get(questionID(a.ID)).(*QuestionItem); ok {
			q.Outcome, q.Answers, q.By = a.Outcome, a.Answers, actorName(a.By)
		}
		p.emit(op{kind: opFill, target: questionID(a.ID) + "-state", comp: QuestionState(a.Outcome, a.Answers, actorName(a.By))})
		p.emit(op{kind: opRemove, target: PanelID(a.ID)})
	case session.TypeLLMRetry:
		r, err := session.Decode[session.LLMRetry](ev)
		if err != nil {
			return err
		}
		// The failed attempt ends here; its time counts as model time.
		p.requestEnded(r.Turn, ev.Time, nil)
		if p.figuresOnly {
			return nil
		}
		// The failed attempt's partial blocks are gone from the model's
		// view; the retry row takes their place.
		prefix := blockPrefix(r.Turn, r.Step)
		p.dropStreams(prefix)
		p.replacePrefix(prefix, nil)
		p.emit(op{kind: opReplacePrefix, target: prefix})
		it := RetryRow(base, r)
		p.add(it)
		p.upsert(it)
	case session.TypeLLMRetryStarted:
		r, err := session.Decode[session.LLMRetryStarted](ev)
		if err != nil {
			return err
		}
		if it, ok := p.get(retryID(r.Turn, r.Step)).(*RetryItem); ok {
			it.Started = true
		}
		// A retry is a new request: its first token is timed from here.
		p.requestStarted(r.Turn, ev.Time)
		p.emit(op{kind: opFill, target: retryID(r.Turn, r.Step) + "-state", comp: RetryState(&RetryItem{Retry: r.Retry, Started: true})})
	case session.TypeTurnEnd:
		te, err := session.Decode[session.TurnEnd](ev)
		if err != nil {
			return err
		}
		var items []Item
		tu := p.endTurn(te.Turn, ev.Time)
		p.totals = p.totals.Add(tu.Figures)
		if p.figuresOnly {
			return nil
		}
		// A turn without a model answer (stopped before, or failed)
		// shows no figures row, as before there were timings.
		if tu.Requests > 0 {
			tu.Base = withID(base, turnUsageID(te.Turn))
			items = append(items, tu)
		}
		if it := TurnEndItem(base, te); it != nil {
			items = append(items, it)
		}
		for _, it := range items {
			p.add(it)
		}
		p.upsert(items...)
	case session.TypeRequestContext:
		rc, err := session.Decode[session.RequestContext](ev)
		if err != nil {
			return err
		}
		if rc.ContextWindow > 0 {
			p.window = rc.ContextWindow
		}
	case session.TypeCompactionStart:
		cs, err := session.Decode[session.CompactionStart](ev)
		if err != nil {
			return err
		}
		p.triggers[cs.CompactionID] = triggerOf(cs)
	case session.TypeCompactionSum:
		cs, err := session.Decode[session.CompactionSummary](ev)
		if err != nil {
			return err
		}
		it := p.md.CompactionMarker(base, cs, p.triggers[cs.CompactionID])
		p.add(it)
		p.upsert(it)
	case session.TypeCompactionEnd:
		c, err := session.Decode[session.CompactionEnd](ev)
		if err != nil {
			return err
		}
		if p.live {
			delete(p.triggers, c.CompactionID)
		}
		if c.Error != "" {
			p.notice(base, NoticeCompaction, "Compaction failed: "+safeMessage(c.Error))
		}
	case session.TypePermissionMode:
		m, err := session.Decode[session.PermissionModeSet](ev)
		if err != nil {
			return err
		}
		p.notice(base, NoticeMode, "Permission mode: "+string(m.Mode)+byText(actorName(m.By)))
		p.emit(op{kind: opUpsertIn, target: ParentChatHead, comp: ModeBadge(string(m.Mode))})
	case session.TypeModelSelected:
		m, err := session.Decode[session.ModelSelected](ev)
		if err != nil {
			return err
		}
		p.notice(base, NoticeModel, "Model: "+m.Provider+" / "+m.Model+byText(actorName(m.By)))
		if p.live && p.label != nil {
			label, offline := p.label(m.Provider, m.Model)
			p.emit(op{kind: opUpsertIn, target: ParentChatHead, comp: ModelBadge(label, offline)})
		}
	case session.TypeEffortSelected:
		// The header's effort control follows the event in the browser
		// (it keeps its own state); the transcript says who changed it.
		e, err := session.Decode[session.EffortSelected](ev)
		if err != nil {
			return err
		}
		p.notice(base, NoticeModel, EffortNotice(e.Effort)+byText(actorName(e.By)))
	case session.TypeWorkspaceReady:
		w, err := session.Decode[session.WorkspaceReady](ev)
		if err != nil {
			return err
		}
		p.notice(base, NoticeWorkspace, workspaceReadyText(w))
	case session.TypeWorkspaceFailed:
		w, err := session.Decode[session.WorkspaceFailed](ev)
		if err != nil {
			return err
		}
		if w.Interrupted {
			// No empty workspace to go on in: the session takes no input.
			p.notice(base, NoticeWorkspaceKO, "The workspace could not be prepared: "+w.Error+".")
			break
		}
		p.notice(base, NoticeWorkspaceKO, "The workspace could not be prepared: "+w.Error+" The session goes on in an empty workspace.")
	case session.TypeNetworkRefused:
		n, err := session.Decode[session.NetworkRefused](ev)
		if err != nil {
			return err
		}
		p.notice(base, NoticeNetwork, NetworkRefusedText(n))
	case session.TypeSessionTitle:
		// The title lives in the page header (rendered from the session
		// row), not in the transcript.
		t, err := session.Decode[session.SessionTitle](ev)
		if err != nil {
			return err
		}
		p.emit(op{kind: opFill, target: "session-title", comp: textComponent(t.Title)})
	}
	return nil
}

// chunk folds one stream chunk into the step's blocks: a block's shell at
// block-start, its text at deltas (and, live, a markdown preview at most
// once per interval of event time, so which deltas carry one is decided by
// the log alone and every viewer and reconnect sees the same), its final
// form at block-end.
func (p *Projection) chunk(base Base, c session.AssistantChunk) {
	if p.figuresOnly {
		switch c.Chunk.Type {
		case llm.ChunkTextDelta, llm.ChunkReasoningDelta, llm.ChunkToolCallDelta:
			p.firstToken(c.Turn, base.Time)
		}
		return
	}
	id := BlockID(c.Turn, c.Step, c.Chunk.Index)
	switch c.Chunk.Type {
	case llm.ChunkBlockStart:
		if it := BlockStartItem(base, c); it != nil {
			p.add(it)
			p.streams[id] = &stream{lastPoint: base.Time}
			p.upsert(it)
		}
	case llm.ChunkToolCallDelta:
		p.firstToken(c.Turn, base.Time)
	case llm.ChunkReasoningDelta, llm.ChunkTextDelta:
		p.firstToken(c.Turn, base.Time)
		s := p.streams[id]
		if s == nil {
			return
		}
		s.sb.WriteString(c.Chunk.Text)
		if p.live && c.Chunk.Type == llm.ChunkTextDelta && base.Time-s.lastPoint >= p.interval {
			s.lastPoint = base.Time
			p.emit(op{kind: opPreview, target: id, upto: base.Seq, text: s.sb.String()})
		}
	case llm.ChunkBlockEnd:
		if it := p.md.BlockEndItem(base, c); it != nil {
			if old := p.get(id); old != nil {
				it = withSeqOf(it, old)
			}
			p.add(it)
			delete(p.streams, id)
			p.upsert(it)
		}
	}
}

// turnFigures is the open turn's figures row, created on its first event
// in reach.
func (p *Projection) turnFigures(turn int) *UsageItem {
	tu := p.turnUsage[turn]
	if tu == nil {
		tu = &UsageItem{Turn: turn, TurnEnd: true}
		p.turnUsage[turn] = tu
	}
	return tu
}

// clock is the open turn's request and tool clock.
func (p *Projection) clock(turn int) *turnClock {
	c := p.turnClock[turn]
	if c == nil {
		c = &turnClock{}
		p.turnClock[turn] = c
	}
	return c
}

// requestStarted opens a model request of turn at t: a step/start (the
// driver builds and sends the request right after it) or an
// llm/retry-started.
func (p *Projection) requestStarted(turn int, t int64) {
	c := p.clock(turn)
	if c.reqOpen {
		// Not seen in a valid log (a request ends before the next
		// starts); end it here rather than count it twice.
		p.requestEnded(turn, t, nil)
	}
	c.reqOpen, c.reqStart, c.reqFirst, c.streamed = true, t, 0, false
}

// firstToken times the open request's first delta chunk (text, reasoning
// or tool call); the turn's TTFT is its first streamed request's.
func (p *Projection) firstToken(turn int, t int64) {
	c := p.turnClock[turn]
	if c == nil || !c.reqOpen || c.streamed {
		return
	}
	c.reqFirst, c.streamed = t, true
	if tu := p.turnFigures(turn); !tu.HasTTFT {
		tu.TTFTMs, tu.HasTTFT = t-c.reqStart, true
	}
}

// awaitingToken: some open request has not streamed yet (a figures-only
// projection decodes chunks only then).
func (p *Projection) awaitingToken() bool {
	for _, c := range p.turnClock {
		if c.reqOpen && !c.streamed {
			return true
		}
	}
	return false
}

// requestEnded closes the open request of turn at t: its assistant/message
// (usage set when the provider reported it), its llm/retry, or its turn's
// end. A request whose start is out of reach (a page cut mid-turn) adds
// nothing.
func (p *Projection) requestEnded(turn int, t int64, u *llm.Usage) {
	c := p.turnClock[turn]
	if c == nil || !c.reqOpen {
		return
	}
	c.reqOpen = false
	f := &p.turnFigures(turn).Figures
	f.Requests++
	f.ModelMs += t - c.reqStart
	if !c.streamed {
		return
	}
	f.Streamed++
	f.TTFTSumMs += c.reqFirst - c.reqStart
	if u != nil && t > c.reqFirst {
		f.StreamMs += t - c.reqFirst
		f.StreamOutput += u.OutputTokens
	}
}

// toolStarted and toolEnded time a tool call, tool/call to tool/result.
func (p *Projection) toolStarted(turn int, callID string, t int64) {
	c := p.clock(turn)
	if c.tools == nil {
		c.tools = map[string]int64{}
	}
	c.tools[callID] = t
}

func (p *Projection) toolEnded(turn int, callID string, t int64) {
	c := p.turnClock[turn]
	if c == nil {
		return
	}
	if start, ok := c.tools[callID]; ok {
		delete(c.tools, callID)
		p.turnFigures(turn).Figures.ToolMs += t - start
	}
}

// endTurn closes the turn at its turn/end (time t): what is still open
// (a request cut off, tools without a result) ends with it. It returns the
// turn's figures row (a fresh one when none of its events was in reach),
// which no longer belongs to the open turns.
func (p *Projection) endTurn(turn int, t int64) *UsageItem {
	tu := p.turnFigures(turn)
	if c := p.turnClock[turn]; c != nil {
		p.requestEnded(turn, t, nil)
		for _, start := range c.tools {
			tu.Figures.ToolMs += t - start
		}
	}
	delete(p.turnUsage, turn)
	delete(p.turnClock, turn)
	if tu.HasDuration {
		tu.DurationMs = t - tu.startedAt
	}
	tu.Figures.Turns = 1
	tu.Figures.Usage = tu.Usage
	return tu
}

// notice adds a one-line notice row.
func (p *Projection) notice(base Base, kind NoticeKind, text string) {
	it := &NoticeItem{Base: withID(base, seqID("n", base.Seq)), Kind: kind, Text: text}
	p.add(it)
	p.upsert(it)
}

// forgetTurns drops what only earlier turns address (live): at a
// turn/start no later event updates an earlier turn's items, so a
// session's live projection stays the size of one turn.
func (p *Projection) forgetTurns() {
	clear(p.items)
	p.items = p.items[:0]
	clear(p.index)
	clear(p.turnUsage)
	clear(p.turnClock)
	clear(p.streams)
	clear(p.callArgs)
}

// finish is the page: the items without the holes removed ones left, the
// streaming blocks with their text and markdown as of now.
func (p *Projection) finish() []Item {
	items := p.items[:0]
	for _, it := range p.items {
		if it == nil {
			continue
		}
		if s := p.streams[it.ItemID()]; s != nil {
			switch v := it.(type) {
			case *ReasoningItem:
				v.Text = s.sb.String()
			case *TextItem:
				v.Raw = s.sb.String()
				v.HTML = p.md.Render(v.Raw)
			}
		}
		items = append(items, it)
	}
	p.items = items
	return items
}

func (p *Projection) add(it Item) {
	if i, ok := p.index[it.ItemID()]; ok {
		p.items[i] = it
		return
	}
	p.index[it.ItemID()] = len(p.items)
	p.items = append(p.items, it)
}

func (p *Projection) get(id string) Item {
	if i, ok := p.index[id]; ok {
		return p.items[i]
	}
	return nil
}

// replacePrefix swaps every item whose id starts with prefix for repl,
// placed where the first of them was.
func (p *Projection) replacePrefix(prefix string, repl []Item) {
	pos := -1
	for id, i := range p.index {
		if strings.HasPrefix(id, prefix) {
			if pos < 0 || i < pos {
				pos = i
			}
			p.items[i] = nil
			delete(p.index, id)
		}
	}
	if pos < 0 {
		for _, it := range repl {
			p.add(it)
		}
		return
	}
	// Put the first replacement in the first slot and insert the others
	// after it.
	tail := append([]Item(nil), p.items[pos+1:]...)
	p.items = p.items[:pos]
	for _, it := range repl {
		p.index[it.ItemID()] = len(p.items)
		p.items = append(p.items, it)
	}
	for _, it := range tail {
		if it != nil {
			p.index[it.ItemID()] = len(p.items)
		}
		p.items = append(p.items, it)
	}
}

func (p *Projection) dropStreams(prefix string) {
	for id := range p.streams {
		if strings.HasPrefix(id, prefix) {
			delete(p.streams, id)
		}
	}
}

// Fragment operations (docs/ui.md), recorded by live projections.

type opKind uint8

const (
	opUpsert        opKind = iota // items upserted into the transcript
	opUpsertIn                    // comp upserted into parent target
	opPanel                       // comp upserted into the takeover, for those who may answer
	opReplacePrefix               // items replace the elements whose id starts with target
	opFill                        // comp replaces target's children
	opRemove                      // target is removed
	opAppendText                  // text is appended to target
	opPreview                     // markdown of text replaces streaming block target's body, up to seq upto
)

type op struct {
	kind   opKind
	target string
	items  []Item
	comp   templ.Component
	text   string
	upto   int64
}

func (p *Projection) emit(o op) {
	if p.live {
		p.ops = append(p.ops, o)
	}
}

// upsert records the items the event added or replaced.
func (p *Projection) upsert(items ...Item) {
	if len(items) > 0 {
		p.emit(op{kind: opUpsert, items: items})
	}
}

// render writes the recorded operations for one viewer class.
func (p *Projection) render(panels, showAuthor bool) (string, error) {
	if len(p.ops) == 0 && p.meter == nil && p.footer == nil {
		return "", nil
	}
	f := newFragment()
	for _, o := range p.ops {
		var err error
		switch o.kind {
		case opUpsert:
			items := o.items
			if p.author != nil && p.author.ShowAuthor != showAuthor {
				items = make([]Item, len(o.items))
				for i, it := range o.items {
					if it == Item(p.author) {
						u := *p.author
						u.ShowAuthor = showAuthor
						it = &u
					}
					items[i] = it
				}
			}
			err = f.upsertItems(items...)
		case opUpsertIn:
			err = f.upsert(o.target, o.comp)
		case opPanel:
			if panels {
				err = f.upsert(ParentTakeover, o.comp)
			}
		case opReplacePrefix:
			err = f.replacePrefix(o.target, o.items)
		case opFill:
			err = f.fill(o.target, o.comp)
		case opRemove:
			f.remove(o.target)
		case opAppendText:
			f.appendText(o.target, o.text)
		case opPreview:
			f.preview(o.target, o.upto, p.md.Render(o.text))
		}
		if err != nil {
			return "", err
		}
	}
	if p.meter != nil {
		if err := f.upsert(ParentChatHead, ContextMeter(*p.meter)); err != nil {
			return "", err
		}
	}
	if p.footer != nil {
		if err := f.upsert(ParentFooter, SessionFooter(*p.footer)); err != nil {
			return "", err
		}
	}
	return f.String(), nil
}
