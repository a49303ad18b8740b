package session

import "harness/internal/llm"

// TypeSubagentStarted links a parent's task call to the subagent session
// that runs it (upstream's subagent/descriptor plays this part). It is
// log-only (the model reads the call's tool/result) and is appended inside
// the call's step, after its tool/call, once the child session exists, so a
// transcript can show the child's progress while the call runs.
const TypeSubagentStarted Type = "subagent/started" // SubagentStarted

// SubagentStarted names the child session of a running task call.
type SubagentStarted struct {
	Turn   int    `json:"turn"`
	Step   int    `json:"step"`
	CallID string `json:"callId"`
	// Session is the child session's id.
	Session     string `json:"session"`
	Description string `json:"description"`
	// Tools are the tools the child was offered, sorted.
	Tools []string `json:"tools"`
	// Mode is the child's permission mode (docs/lifecycle.md "Subagents").
	Mode PermissionMode `json:"mode"`
}

// SubagentMeta is the presentation meta of a task call's tool/result
// (ToolResult.Meta under the key "subagent"): what the child did. Usage
// sums the child's model requests; the parent turn's usage row adds it.
type SubagentMeta struct {
	Session     string     `json:"session"`
	Description string     `json:"description,omitempty"`
	Reason      ReasonKind `json:"reason,omitempty"` // the child turn's end
	Usage       *llm.Usage `json:"usage,omitempty"`
	Requests    int        `json:"requests,omitempty"`
	// Cost sums the priced requests' costs (Priced of them), as the
	// child's own usage row prices them.
	Cost   float64 `json:"cost,omitempty"`
	Priced int     `json:"priced,omitempty"`
}
