package render

import (
	"encoding/json"
	"strings"

	"harness/internal/llm"
	"harness/internal/session"
)

// SubagentView is what a task card shows of its child session. The
// child's transcript itself is not part of the parent's projection (render
// is a function of the parent's events): the card carries the child's id
// and the page's script follows the child's own log into the card
// (docs/ui.md "Subagents").
type SubagentView struct {
	// Session is the child's id; "" until subagent/started.
	Session     string
	Description string
	Tools       []string
	Mode        session.PermissionMode
	// Reason is how the child's turn ended (from the result's meta).
	Reason   session.ReasonKind
	Usage    *llm.Usage
	Requests int
}

// subagentView returns the card's view, made from the call's arguments
// when there is none yet (the copy of the item the caller changes).
func (t *ToolItem) subagentView() *SubagentView {
	if t.Subagent == nil {
		var a struct {
			Description string `json:"description"`
		}
		_ = json.Unmarshal([]byte(t.Arguments), &a) // unreadable arguments: no description
		t.Subagent = &SubagentView{Description: strings.TrimSpace(a.Description)}
	} else {
		cp := *t.Subagent
		t.Subagent = &cp
	}
	return t.Subagent
}

// subagentMeta reads a task result's meta.
func subagentMeta(meta json.RawMessage) (session.SubagentMeta, bool) {
	var m struct {
		Subagent *session.SubagentMeta `json:"subagent"`
	}
	if len(meta) == 0 || json.Unmarshal(meta, &m) != nil || m.Subagent == nil {
		return session.SubagentMeta{}, false
	}
	return *m.Subagent, true
}

// subagentStarted is the card of a task call once its child exists; a
// call out of reach gets a card from the event alone.
func subagentStarted(base Base, t *ToolItem, s session.SubagentStarted) *ToolItem {
	if t == nil {
		t = &ToolItem{Base: withID(base, ToolID(s.Turn, s.CallID)), Turn: s.Turn, CallID: s.CallID, Name: "task", Status: ToolRunning}
	} else {
		cp := *t
		t = &cp
	}
	sv := t.subagentView()
	sv.Session, sv.Tools, sv.Mode = s.Session, s.Tools, s.Mode
	if s.Description != "" {
		sv.Description = s.Description
	}
	return t
}

// taskTitle is the card's heading text.
func taskTitle(v *ToolItem) string {
	if v.Subagent != nil && v.Subagent.Description != "" {
		return v.Subagent.Description
	}
	return truncateText(oneLine(v.Arguments), 120)
}

// subagentSession is the child's id ("" before it exists).
func subagentSession(v *ToolItem) string {
	if v.Subagent == nil {
		return ""
	}
	return v.Subagent.Session
}

// subagentFacts is the card's line about the child: its mode and tools.
func subagentFacts(v *ToolItem) string {
	sv := v.Subagent
	if sv == nil || sv.Session == "" {
		return "starting a subagent…"
	}
	parts := []string{"subagent"}
	if sv.Mode != "" {
		parts = append(parts, string(sv.Mode))
	}
	if len(sv.Tools) > 0 {
		parts = append(parts, "tools: "+strings.Join(sv.Tools, ", "))
	} else {
		parts = append(parts, "no tools")
	}
	if sv.Usage != nil {
		parts = append(parts, tokens(sv.Usage.InputTokens+sv.Usage.CacheReadTokens+sv.Usage.CacheWriteTokens)+" in, "+tokens(sv.Usage.OutputTokens)+" out")
	}
	return strings.Join(parts, " · ")
}
