package importer

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"harness/internal/llm"
	"harness/internal/session"
)

// unknownRoute names a provider or model a log does not record.
const unknownRoute = "unknown"

// obj is a JSON object whose members are kept as raw JSON, so a rewrite
// touches only the members it changes.
type obj = map[string]json.RawMessage

// converter rewrites the events of a DeepSeek Harness log into Harness's
// shapes (see the package documentation).
type converter struct {
	turnOpen        bool
	provider, model string         // the last route a request/header or request/context named
	dropped         map[string]int // events dropped outside a turn, by type
	ignorable       map[string]int // events kept as ignorable, by type
	filled          int            // routes filled in for configs without provider or model
	images          int            // image blocks replaced by a text placeholder
	notes           []string
}

func newConverter() *converter {
	return &converter{dropped: map[string]int{}, ignorable: map[string]int{}}
}

// needsTurn are the types Harness requires inside an open turn; outside
// one they describe no request.
var needsTurn = map[session.Type]bool{
	session.TypeRequestHeader: true, session.TypeRequestContext: true, session.TypeTodoWrite: true,
	session.TypeToolOutput: true, session.TypeApprovalAsked: true, session.TypeApprovalDecided: true,
	session.TypeQuestionAsked: true, session.TypeQuestionAnswered: true,
}

// convertAll converts items in order, drops what cannot stand outside a
// turn and renumbers the rest contiguously.
func (c *converter) convertAll(items []item) ([]item, error) {
	out := make([]item, 0, len(items))
	remap := make([]int64, len(items)) // old seq (= index) → new seq, -1 when dropped
	for i := range items {
		it := items[i]
		keep, err := c.convert(&it)
		if err != nil {
			return nil, err
		}
		if !keep {
			remap[i] = -1
			continue
		}
		remap[i] = int64(len(out))
		out = append(out, it)
	}
	c.summarizeNotes()
	if len(out) == len(items) {
		return out, nil
	}
	return out, renumber(out, remap)
}

func (c *converter) summarizeNotes() {
	for _, t := range sortedKeys(c.dropped) {
		c.notes = append(c.notes, fmt.Sprintf("dropped %d %s event(s) outside any turn (Harness keeps them inside turns; they describe no request)", c.dropped[t], t))
	}
	if len(c.ignorable) > 0 {
		c.notes = append(c.notes, "kept events of types Harness does not know as ignorable: "+strings.Join(sortedKeys(c.ignorable), ", "))
	}
	if c.filled > 0 {
		c.notes = append(c.notes, fmt.Sprintf("%d request configuration(s) named no provider or model: filled in from the log, else %q", c.filled, unknownRoute))
	}
	if c.images > 0 {
		c.notes = append(c.notes, fmt.Sprintf("%d image block(s) replaced by a text placeholder (the image bytes are not in the log)", c.images))
	}
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// convert rewrites one event in place; keep is false when it is dropped.
func (c *converter) convert(it *item) (keep bool, err error) {
	ev := &it.ev
	if needsTurn[ev.Type] && !c.turnOpen {
		c.dropped[string(ev.Type)]++
		return false, nil
	}
	id := "imported-" + strconv.FormatInt(ev.Seq, 10)
	switch ev.Type {
	case "request/header-delta":
		return false, lineErr(CodeUnsupported, it.line, "legacy request/header-delta events cannot be imported (DeepSeek Harness refuses them too)")
	case session.TypeTurnStart:
		c.turnOpen = true
	case session.TypeTurnEnd:
		c.turnOpen = false
	case session.TypeUserMessage:
		if complete(ev.Data) {
			break
		}
		err = c.rewrite(it, func(m obj) (bool, error) { return c.message(m, llm.RoleUser, id) })
	case session.TypeAssistantMessage:
		err = c.rewrite(it, func(m obj) (bool, error) { return c.assistant(m, id) })
	case session.TypeToolResult:
		var wrapped struct {
			Message json.RawMessage `json:"message"`
		}
		if json.Unmarshal(ev.Data, &wrapped) == nil && complete(wrapped.Message) {
			break
		}
		err = c.rewrite(it, func(m obj) (bool, error) { return c.toolResult(m, id) })
	case session.TypeRequestHeader:
		err = c.rewrite(it, c.header)
	case session.TypeRequestContext:
		err = c.rewrite(it, func(m obj) (bool, error) { return c.route(m), nil })
	case session.TypeSessionTitle:
		err = c.rewrite(it, title)
	case session.TypeInboxSpliced:
		err = c.rewrite(it, func(m obj) (bool, error) { return c.splice(m, id) })
	default:
		if !session.KnownTypes[ev.Type] && ev.Type != "" {
			ev.Ignorable = true
			c.ignorable[string(ev.Type)]++
		}
	}
	return err == nil, err
}

// complete reports whether raw is a person's or a tool's message that
// message would leave as it is: id, role, source kind and content set,
// and no block it rewrites (an upstream image, a tool result's nested
// content). Checking first spares decoding a large message into maps
// (a prompt or a tool output may be megabytes) just to find nothing to
// change. Anything else, malformed included, takes the full path.
func complete(raw json.RawMessage) bool {
	var m struct {
		ID      string `json:"id"`
		Role    string `json:"role"`
		Content []struct {
			Type       llm.BlockType   `json:"type"`
			Attachment json.RawMessage `json:"attachment"`
		} `json:"content"`
		Source *struct {
			Kind string `json:"kind"`
		} `json:"source"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &m) != nil {
		return false
	}
	if m.ID == "" || m.Role == "" || m.Content == nil || m.Source == nil || m.Source.Kind == "" {
		return false
	}
	for _, b := range m.Content {
		if b.Type == llm.BlockToolResult || b.Type == llm.BlockImage && (len(b.Attachment) == 0 || b.Attachment[0] != '"') {
			return false
		}
	}
	return true
}

// rewrite applies fn to the event's data object and re-encodes it when fn
// changed something.
func (c *converter) rewrite(it *item, fn func(m obj) (bool, error)) error {
	var m obj
	if err := json.Unmarshal(it.ev.Data, &m); err != nil || m == nil {
		return lineErr(CodeUnsupported, it.line, "%s data is not a JSON object", it.ev.Type)
	}
	changed, err := fn(m)
	if err != nil {
		return &Error{Code: CodeUnsupported, Line: it.line, Reason: fmt.Sprintf("%s: %v", it.ev.Type, err), Err: err}
	}
	if !changed {
		return nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return &Error{Code: CodeUnsupported, Line: it.line, Reason: fmt.Sprintf("%s: %v", it.ev.Type, err), Err: err}
	}
	it.ev.Data = b
	return nil
}

// message completes one message object: id, role, content (images
// replaced) and source.
func (c *converter) message(m obj, role llm.Role, id string) (bool, error) {
	changed := false
	if str(m["id"]) == "" {
		m["id"], changed = mustJSON(id), true
	}
	if str(m["role"]) == "" {
		m["role"], changed = mustJSON(role), true
	}
	content, ch, err := c.blocks(m["content"])
	if err != nil {
		return false, err
	}
	if ch {
		m["content"], changed = content, true
	}
	var src obj
	if raw := m["source"]; len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &src); err != nil {
			return false, fmt.Errorf("message source is not an object")
		}
	}
	if src == nil {
		src = obj{}
	}
	srcChanged := false
	if str(src["kind"]) == "" {
		kind := llm.SourceUser
		if role == llm.RoleAssistant {
			kind = llm.SourceModel
		}
		src["kind"], srcChanged = mustJSON(kind), true
	}
	if role == llm.RoleAssistant && str(src["kind"]) == string(llm.SourceModel) {
		if str(src["provider"]) == "" {
			src["provider"], srcChanged = mustJSON(orUnknown(c.provider)), true
		}
		if str(src["model"]) == "" {
			src["model"], srcChanged = mustJSON(orUnknown(c.model)), true
		}
	}
	if srcChanged {
		m["source"], changed = mustJSON(src), true
	}
	return changed, nil
}

// assistant wraps the older inline shape ({turn, step, content,
// provenance, usage}) into data.message, or completes data.message.
func (c *converter) assistant(m obj, id string) (bool, error) {
	if raw, ok := m["message"]; ok && string(raw) != "null" {
		var msg obj
		if err := json.Unmarshal(raw, &msg); err != nil || msg == nil {
			return false, fmt.Errorf("message is not an object")
		}
		changed, err := c.message(msg, llm.RoleAssistant, id)
		if err != nil || !changed {
			return false, err
		}
		m["message"] = mustJSON(msg)
		return true, nil
	}
	msg := obj{}
	for _, k := range []string{"id", "role", "content", "source"} {
		if v, ok := m[k]; ok {
			msg[k] = v
			delete(m, k)
		}
	}
	if raw, ok := m["provenance"]; ok {
		var p struct {
			Provider string `json:"provider"`
			Model    string `json:"model"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			return false, fmt.Errorf("provenance is not an object")
		}
		delete(m, "provenance")
		if _, has := msg["source"]; !has {
			msg["source"] = mustJSON(llm.Source{Kind: llm.SourceModel, Provider: orUnknown(firstOf(p.Provider, c.provider)), Model: orUnknown(firstOf(p.Model, c.model))})
		}
	}
	if _, err := c.message(msg, llm.RoleAssistant, id); err != nil {
		return false, err
	}
	m["message"] = mustJSON(msg)
	return true, nil
}

// toolResult wraps a flat tool result ({turn, step, callId, content,
// isError}) into a tool-result message, or completes data.message.
func (c *converter) toolResult(m obj, id string) (bool, error) {
	if raw, ok := m["message"]; ok && string(raw) != "null" {
		var msg obj
		if err := json.Unmarshal(raw, &msg); err != nil || msg == nil {
			return false, fmt.Errorf("message is not an object")
		}
		changed, err := c.message(msg, llm.RoleUser, id)
		if err != nil || !changed {
			return false, err
		}
		m["message"] = mustJSON(msg)
		return true, nil
	}
	callID := str(m["callId"])
	if callID == "" {
		return false, fmt.Errorf("a flat tool result needs a callId")
	}
	content, _, err := c.blocks(m["content"])
	if err != nil {
		return false, err
	}
	isError := string(m["isError"]) == "true"
	block := obj{"type": mustJSON(llm.BlockToolResult), "toolCallId": mustJSON(callID), "content": content, "isError": mustJSON(isError)}
	m["message"] = mustJSON(obj{
		"id": mustJSON(id), "role": mustJSON(llm.RoleUser),
		"content": mustJSON([]obj{block}),
		"source":  mustJSON(llm.Source{Kind: llm.SourceTool, CallID: callID}),
	})
	delete(m, "callId")
	delete(m, "content")
	delete(m, "isError")
	return true, nil
}

// blocks replaces upstream image blocks (also inside tool results) with a
// text placeholder; a missing content becomes [].
func (c *converter) blocks(raw json.RawMessage) (json.RawMessage, bool, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage(`[]`), true, nil
	}
	var blocks []json.RawMessage
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, false, fmt.Errorf("content is not an array")
	}
	changed := false
	for i, b := range blocks {
		var probe struct {
			Type       llm.BlockType   `json:"type"`
			Attachment json.RawMessage `json:"attachment"`
			MediaType  string          `json:"mediaType"`
			Content    json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(b, &probe); err != nil {
			return nil, false, fmt.Errorf("content block %d is not an object", i)
		}
		switch probe.Type {
		case llm.BlockImage:
			if len(probe.Attachment) > 0 && probe.Attachment[0] == '"' {
				continue // already Harness's shape: an attachment reference
			}
			blocks[i], changed = mustJSON(llm.Text(imagePlaceholder(probe.Attachment, probe.MediaType))), true
			c.images++
		case llm.BlockToolResult:
			inner, ch, err := c.blocks(probe.Content)
			if err != nil {
				return nil, false, err
			}
			if ch {
				var blk obj
				if err := json.Unmarshal(b, &blk); err != nil {
					return nil, false, err
				}
				blk["content"] = inner
				blocks[i], changed = mustJSON(blk), true
			}
		}
	}
	if !changed {
		return raw, false, nil
	}
	return mustJSON(blocks), true, nil
}

// imagePlaceholder is the text an upstream image block becomes:
// "[image: NAME, TYPE]".
func imagePlaceholder(raw json.RawMessage, mediaType string) string {
	var a struct {
		AttachmentID string `json:"attachmentId"`
		MediaType    string `json:"mediaType"`
		Name         string `json:"name"`
	}
	_ = json.Unmarshal(raw, &a)
	name := a.Name
	if name == "" {
		name = a.AttachmentID
		if len(name) > 19 {
			name = name[:19] + "…"
		}
	}
	if name == "" {
		name = "image"
	}
	if mt := firstOf(a.MediaType, mediaType); mt != "" {
		return "[image: " + name + ", " + mt + "]"
	}
	return "[image: " + name + "]"
}

// header rewrites a request/header: tools as a placeholder string are
// dropped, tools as names become name-only schemas, a missing provider or
// model is filled in.
func (c *converter) header(m obj) (bool, error) {
	var h obj
	if err := json.Unmarshal(m["header"], &h); err != nil || h == nil {
		return false, fmt.Errorf("header is not an object")
	}
	var cfg obj
	if err := json.Unmarshal(h["config"], &cfg); err != nil || cfg == nil {
		return false, fmt.Errorf("header config is not an object")
	}
	changed := false
	if c.route(cfg) {
		h["config"], changed = mustJSON(cfg), true
	}
	if raw, ok := h["tools"]; ok {
		tools, ch, err := toolSchemas(raw)
		if err != nil {
			return false, err
		}
		if ch {
			changed = true
			if tools == nil {
				delete(h, "tools")
			} else {
				h["tools"] = tools
			}
		}
	}
	if changed {
		m["header"] = mustJSON(h)
	}
	return changed, nil
}

// route fills a missing provider or model of m (a request config or a
// request/context) and remembers the route.
func (c *converter) route(m obj) bool {
	changed := false
	provider, model := str(m["provider"]), str(m["model"])
	if provider == "" {
		provider, changed = orUnknown(c.provider), true
		m["provider"] = mustJSON(provider)
	}
	if model == "" {
		model, changed = orUnknown(c.model), true
		m["model"] = mustJSON(model)
	}
	if changed {
		c.filled++
	}
	if provider != unknownRoute {
		c.provider = provider
	}
	if model != unknownRoute {
		c.model = model
	}
	return changed
}

// toolSchemas converts a header's tools: a placeholder string (nil: drop
// the member), a list of names, or schemas (kept).
func toolSchemas(raw json.RawMessage) (json.RawMessage, bool, error) {
	if len(raw) > 0 && raw[0] == '"' {
		return nil, true, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, false, fmt.Errorf("header tools are neither a list nor a placeholder")
	}
	changed := false
	for i, t := range list {
		if len(t) > 0 && t[0] == '"' {
			var name string
			if err := json.Unmarshal(t, &name); err != nil {
				return nil, false, err
			}
			list[i], changed = mustJSON(llm.ToolSchema{Name: name, Parameters: json.RawMessage(`{"type":"object"}`)}), true
		}
	}
	if !changed {
		return raw, false, nil
	}
	return mustJSON(list), true, nil
}

// title turns a source object {kind} into Harness's string source and drops
// messageSeqs (they name upstream seqs).
func title(m obj) (bool, error) {
	changed := false
	if _, ok := m["messageSeqs"]; ok {
		delete(m, "messageSeqs")
		changed = true
	}
	raw := m["source"]
	if len(raw) > 0 && raw[0] == '"' {
		return changed, nil
	}
	var src struct {
		Kind string `json:"kind"`
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &src); err != nil {
			return false, fmt.Errorf("title source is neither a string nor an object")
		}
	}
	kind := session.TitleSource(src.Kind)
	switch kind {
	case "llm", "model":
		kind = session.TitleModel
	case session.TitleUser, session.TitleFallback:
	default:
		kind = session.TitleFallback
	}
	m["source"] = mustJSON(kind)
	return true, nil
}

// splice completes the messages an inbox splice inserts.
func (c *converter) splice(m obj, id string) (bool, error) {
	var inserted []obj
	if raw := m["inserted"]; len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &inserted); err != nil {
			return false, fmt.Errorf("inserted is not a list of messages")
		}
	}
	changed := false
	for k, msg := range inserted {
		if msg == nil {
			return false, fmt.Errorf("inserted message %d is not an object", k)
		}
		ch, err := c.message(msg, llm.RoleUser, id+"-"+strconv.Itoa(k))
		if err != nil {
			return false, err
		}
		changed = changed || ch
	}
	if changed {
		m["inserted"] = mustJSON(inserted)
	}
	return changed, nil
}

// renumber gives the kept items contiguous seqs and maps what cites seqs:
// surface ranges, sourceEventSeqs and compaction ranges.
func renumber(items []item, remap []int64) error {
	mapSeq := func(s int64) (int64, bool) {
		if s < 0 || s >= int64(len(remap)) || remap[s] < 0 {
			return s, false
		}
		return remap[s], true
	}
	for i := range items {
		it := &items[i]
		ev := &it.ev
		ev.Seq = int64(i)
		if ev.SourceEventSeqs != nil {
			seqs := make([]int64, 0, len(ev.SourceEventSeqs))
			for _, s := range ev.SourceEventSeqs {
				if n, ok := mapSeq(s); ok {
					seqs = append(seqs, n)
				}
			}
			if len(seqs) == 0 && ev.Type != session.TypeAssistantMessage {
				seqs = nil
			}
			ev.SourceEventSeqs = seqs
		}
		if op := ev.SurfaceOp; op != nil && op.Op == session.OpReplace {
			start, ok1 := mapSeq(op.Start)
			end, ok2 := mapSeq(op.End)
			if !ok1 || !ok2 {
				return lineErr(CodeUnsupported, it.line, "%s replaces events that cannot be imported", ev.Type)
			}
			ev.SurfaceOp = session.Replace(start, end)
		}
		if ev.Type == session.TypeCompactionSum || ev.Type == session.TypeCompactionPrune {
			var m obj
			if json.Unmarshal(ev.Data, &m) != nil {
				continue // validation reports it
			}
			var r session.SeqRange
			if json.Unmarshal(m["shadowedRange"], &r) == nil {
				r.Start, _ = mapSeq(r.Start)
				r.End, _ = mapSeq(r.End)
				m["shadowedRange"] = mustJSON(r)
			}
			var seqs []int64
			if json.Unmarshal(m["shadowedSeqs"], &seqs) == nil {
				out := make([]int64, 0, len(seqs))
				for _, s := range seqs {
					if n, ok := mapSeq(s); ok {
						out = append(out, n)
					}
				}
				m["shadowedSeqs"] = mustJSON(out)
			}
			ev.Data = mustJSON(m)
		}
	}
	return nil
}

// str is the string value of a raw member ("" when absent or not a
// string).
func str(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// mustJSON encodes values built here (strings, objects of raw JSON), which
// always encode.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("importer: encode %T: %v", v, err))
	}
	return b
}

func orUnknown(s string) string {
	if s == "" {
		return unknownRoute
	}
	return s
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
