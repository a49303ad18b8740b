package compact

import (
	"runtime"
	"slices"
	"sync"
	"weak"

	"harness/internal/llm"
	"harness/internal/session"
)

// Baseline says where a measurement's base figure comes from.
type Baseline string

const (
	// BaselineNone: nothing was requested and the surface is empty.
	BaselineNone Baseline = "none"
	// BaselineEstimated: the heuristic price of header and surface.
	BaselineEstimated Baseline = "estimated"
	// BaselineUsage: the provider's reported usage of the latest call.
	BaselineUsage Baseline = "usage"
)

// NodePrice is the heuristic price of one current surface node.
type NodePrice struct {
	Seq    int64 `json:"seq"`
	Tokens int64 `json:"tokens"`
	// pairing is how the node changes the count of unanswered tool calls:
	// the tool-call blocks of an assistant message, -1 for a tool result.
	pairing int
}

// Measurement is the context size of a session's next request (upstream
// §6.1): a baseline (provider usage of the latest call when it is
// trustworthy, else the heuristic), plus the heuristic delta of the surface
// since that call.
type Measurement struct {
	// LogRevision is the number of events folded (the log length).
	LogRevision        int64      `json:"logRevision"`
	Baseline           Baseline   `json:"baseline"`
	BaselineTokens     int64      `json:"baselineTokens"`
	Usage              *llm.Usage `json:"usage,omitempty"` // the anchoring call's usage when Baseline is usage
	SurfaceDeltaTokens int64      `json:"surfaceDeltaTokens"`
	TotalTokens        int64      `json:"totalTokens"`
	SurfaceTokens      int64      `json:"surfaceTokens"`
	HeaderTokens       int64      `json:"headerTokens"` // system prompt and tools of the latest header
	ContextWindow      int64      `json:"contextWindow,omitempty"`
	// Percent is TotalTokens as a percentage of ContextWindow (0 when the
	// window is unknown).
	Percent float64     `json:"percent"`
	Nodes   []NodePrice `json:"nodes"`
}

// Meter measures session logs. It folds each log incrementally and keeps
// the fold per log until the log is garbage collected, so re-measuring after
// an append costs only the new events (plus a copy of the node prices). It
// is safe for concurrent use; one Meter per process is enough.
type Meter struct {
	mu    sync.Mutex
	folds map[weak.Pointer[session.Log]]*fold
}

// NewMeter returns an empty meter.
func NewMeter() *Meter {
	return &Meter{folds: map[weak.Pointer[session.Log]]*fold{}}
}

// Measure folds l up to its current end and returns its measurement; window
// is the route's context window (0 when unknown).
func (m *Meter) Measure(l *session.Log, window int64) Measurement {
	f := m.fold(l)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sync(l)
	return f.measurement(window)
}

// fold returns l's fold, creating it on first use. The map holds l weakly and
// a cleanup drops the entry once l is collected.
func (m *Meter) fold(l *session.Log) *fold {
	key := weak.Make(l)
	m.mu.Lock()
	defer m.mu.Unlock()
	if f, ok := m.folds[key]; ok {
		return f
	}
	f := &fold{}
	m.folds[key] = f
	runtime.AddCleanup(l, m.forget, key)
	return f
}

func (m *Meter) forget(key weak.Pointer[session.Log]) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.folds, key)
}

// pricedHeader is a request header with its canonical form and price.
type pricedHeader struct {
	key    string
	tokens int64
}

// anchor is the state right after the latest assistant/message.
type anchor struct {
	header        *pricedHeader
	surfaceTokens int64 // surface price the baseline already covers
	baseline      Baseline
	tokens        int64
	usage         *llm.Usage
}

// fold is the incremental replay of one log.
type fold struct {
	mu            sync.Mutex
	consumed      int64
	header        *pricedHeader
	nodes         []NodePrice
	surfaceTokens int64
	anchor        *anchor
}

// sync folds every event appended since the last call.
func (f *fold) sync(l *session.Log) {
	end := l.Len()
	if f.consumed >= end {
		return
	}
	batch := l.Events(f.consumed, end)
	lookup := func(seq int64) (session.Event, bool) {
		if i := seq - f.consumed; i >= 0 && i < int64(len(batch)) {
			return batch[i], true
		}
		return l.Event(seq)
	}
	for _, ev := range batch {
		f.apply(ev, lookup)
	}
	f.consumed = end
}

// apply folds one event. The log validated every event, so a decoding
// failure cannot happen; it is priced conservatively instead of failing.
func (f *fold) apply(ev session.Event, lookup func(int64) (session.Event, bool)) {
	switch {
	case ev.Type == session.TypeRequestHeader:
		if rh, err := session.Decode[session.RequestHeader](ev); err == nil {
			f.header = &pricedHeader{key: jsonText(rh.Header), tokens: EstimateHeader(rh.Header)}
		}
		return
	case !session.IsSurface(ev.Type) || ev.SurfaceOp == nil:
		return
	}
	node := priceNode(ev)
	if ev.Type == session.TypeAssistantMessage {
		f.anchor = f.anchorAt(ev, node, lookup)
	}
	if ev.SurfaceOp.Op == session.OpReplace {
		i := slices.IndexFunc(f.nodes, func(n NodePrice) bool { return n.Seq == ev.SurfaceOp.Start })
		j := slices.IndexFunc(f.nodes, func(n NodePrice) bool { return n.Seq == ev.SurfaceOp.End })
		if i >= 0 && j >= i {
			for _, n := range f.nodes[i : j+1] {
				f.surfaceTokens -= n.Tokens
			}
			f.nodes = slices.Replace(f.nodes, i, j+1, node)
			f.surfaceTokens += node.Tokens
			return
		}
	}
	f.nodes = append(f.nodes, node)
	f.surfaceTokens += node.Tokens
}

// anchorAt computes the anchor an assistant/message sets. The request that
// produced it saw the header and the surface as it is just before the
// message, so the baseline covers that surface plus the provider's output.
//
// This differs from upstream, which anchors at the surface of step/start:
// that excludes the step's entered messages (counted twice afterwards) and
// goes stale when overflow recovery replaces nodes inside the step.
func (f *fold) anchorAt(ev session.Event, node NodePrice, lookup func(int64) (session.Event, bool)) *anchor {
	a := &anchor{header: f.header, surfaceTokens: f.surfaceTokens + node.Tokens, baseline: BaselineEstimated}
	am, err := session.Decode[session.AssistantMessage](ev)
	if err == nil && am.Usage != nil && f.header != nil {
		a.surfaceTokens = f.surfaceTokens + providerOutputTokens(ev, node.Tokens, lookup)
		estimated := f.header.tokens + a.surfaceTokens
		// A usage baseline is kept only when it is at least the heuristic,
		// so heuristic deltas from it stay conservative.
		if total := am.Usage.Total(); total >= estimated {
			u := *am.Usage
			a.baseline, a.tokens, a.usage = BaselineUsage, total, &u
			return a
		}
	}
	a.tokens = a.surfaceTokens
	if f.header != nil {
		a.tokens += f.header.tokens
	}
	return a
}

// providerOutputTokens prices what the provider produced for ev,
// reassembled from the chunks it cites; the durable message may be smaller
// (a max-tokens cut drops tool calls). Without provenance the durable
// message is the best estimate.
func providerOutputTokens(ev session.Event, durable int64, lookup func(int64) (session.Event, bool)) int64 {
	if ev.SourceEventSeqs == nil {
		return durable
	}
	var asm llm.Assembler
	for _, seq := range ev.SourceEventSeqs {
		src, ok := lookup(seq)
		if !ok || src.Type != session.TypeAssistantChunk {
			return durable
		}
		c, err := session.Decode[session.AssistantChunk](src)
		if err != nil {
			return durable
		}
		if c.Chunk.Type == llm.ChunkFinish {
			continue // keep every block the provider streamed
		}
		asm.Add(c.Chunk)
	}
	content := asm.Message("", llm.Source{}).Content
	if len(content) == 0 {
		return 0
	}
	return EstimateBlocks(content) + roleOverhead
}

// priceNode prices a surface event as it projects into a request: nothing
// for an assistant message without content.
func priceNode(ev session.Event) NodePrice {
	n := NodePrice{Seq: ev.Seq}
	msg, err := projection(ev)
	switch {
	case err != nil:
		n.Tokens = blockOverhead + ceilTokens(len(ev.Data))
	case msg != nil:
		n.Tokens = EstimateMessage(*msg)
		n.pairing = len(msg.ToolCalls())
		if ev.Type == session.TypeToolResult {
			n.pairing = -1
		}
	}
	return n
}

// projection decodes the model projection of a surface event (§1.5); nil
// when it projects to nothing.
func projection(ev session.Event) (*llm.Message, error) {
	switch ev.Type {
	case session.TypeUserMessage:
		m, err := session.Decode[llm.Message](ev)
		return &m, err
	case session.TypeAssistantMessage:
		am, err := session.Decode[session.AssistantMessage](ev)
		if err != nil || len(am.Message.Content) == 0 {
			return nil, err
		}
		return &am.Message, nil
	case session.TypeToolResult:
		tr, err := session.Decode[session.ToolResult](ev)
		return &tr.Message, err
	}
	return nil, nil
}

// measurement reports the fold's current state.
func (f *fold) measurement(window int64) Measurement {
	m := Measurement{
		LogRevision:   f.consumed,
		SurfaceTokens: f.surfaceTokens,
		ContextWindow: window,
		Nodes:         slices.Clone(f.nodes),
	}
	if f.header != nil {
		m.HeaderTokens = f.header.tokens
	}
	switch a := f.anchor; {
	case a != nil && sameHeader(a.header, f.header):
		m.Baseline, m.BaselineTokens = a.baseline, a.tokens
		m.SurfaceDeltaTokens = f.surfaceTokens - a.surfaceTokens
		if a.usage != nil {
			u := *a.usage
			m.Usage = &u
		}
	case f.header == nil && f.surfaceTokens == 0:
		m.Baseline = BaselineNone
	default:
		m.Baseline, m.BaselineTokens = BaselineEstimated, m.HeaderTokens+f.surfaceTokens
	}
	m.TotalTokens = max(0, m.BaselineTokens+m.SurfaceDeltaTokens)
	if window > 0 {
		m.Percent = float64(m.TotalTokens) * 100 / float64(window)
	}
	if m.Nodes == nil {
		m.Nodes = []NodePrice{}
	}
	return m
}

func sameHeader(a, b *pricedHeader) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.key == b.key
}

// Fold measures one log event by event. A Meter measures as of a log's
// end, whenever asked; a reader whose answer must depend on the events only
// (the live projection, whose fragment for event N is the same whenever it
// is built) keeps its own Fold and feeds it each event in order.
type Fold struct{ f fold }

// Apply folds the next event; lookup finds an earlier event by seq (the
// chunks an assistant message cites), and may be nil.
func (f *Fold) Apply(ev session.Event, lookup func(int64) (session.Event, bool)) {
	if lookup == nil {
		lookup = func(int64) (session.Event, bool) { return session.Event{}, false }
	}
	f.f.apply(ev, lookup)
	f.f.consumed = ev.Seq + 1
}

// Tokens is the size of the next request as of the events folded.
func (f *Fold) Tokens() int64 { return f.f.measurement(0).TotalTokens }
