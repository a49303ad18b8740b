package tools

import (
	"context"
	"encoding/json"
	"os/exec"
	"sync"

	"harness/internal/llm"
	"harness/internal/session"
)

// Env is what the host (the driver) gives the tools of one agent. It must be
// safe for concurrent use: parallel bodies and the live-output timer call it
// from their own goroutines.
type Env interface {
	// Workspace is the absolute session workspace directory.
	Workspace() string
	PermissionMode() session.PermissionMode
	// Emit appends a tool-owned, log-only event (tool/output, todo/write).
	// ctx bounds any waiting; a done ctx may make Emit fail without
	// appending, so output that must be recorded is emitted with a ctx
	// that outlives the call's cancellation (see liveOutput.close).
	Emit(ctx context.Context, t session.Type, data any) error
	// Approve blocks until the request is decided or ctx is done. preview
	// (nil when there is none) is what the call would do, shown to the
	// approver. Only allowed-once and allowed-session let the call run.
	Approve(ctx context.Context, call *Call, reason string, preview *session.ApprovalPreview) session.ApprovalOutcome
	// Ask blocks until the questions are answered or ctx is done.
	Ask(ctx context.Context, call *Call, qs []session.Question) ([]session.Answer, error)
	// Command builds the command that runs p in the agent's sandbox; it
	// starts nothing. An error wrapping sandbox.ErrUnavailable means tool
	// processes are refused on this server.
	Command(ctx context.Context, p Process) (*exec.Cmd, error)
	// Network reports whether the session's network policy (set by an
	// admin, off by default) lets its tools reach the network; errors read
	// as no.
	Network(ctx context.Context) bool
}

// Call is one tool call as the pipeline and the body see it.
type Call struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// RawArguments is exactly what the model produced.
	RawArguments string `json:"rawArguments"`
	// Args is the normalized JSON: "" becomes {}, invalid JSON becomes the
	// raw text as a JSON string (validation then fails).
	Args json.RawMessage `json:"args"`
	Turn int             `json:"turn"`
	Step int             `json:"step"`
	// Index is the call's position among the step's calls (model order).
	Index int `json:"index"`
	// Access is the resolved tool's access; empty for unknown tools.
	Access Access `json:"access,omitempty"`
	Env    Env    `json:"-"`

	state *AgentState
	out   *liveOutput

	mu        sync.Mutex
	deferred  []llm.Message
	concludes bool
}

// newCall builds a call for a tool-call block.
func newCall(b llm.ContentBlock, index, turn, step int, env Env, state *AgentState) *Call {
	return &Call{
		ID:           b.ID,
		Name:         b.Name,
		RawArguments: b.Arguments,
		Args:         normalizeArgs(b.Arguments),
		Turn:         turn,
		Step:         step,
		Index:        index,
		Env:          env,
		state:        state,
	}
}

// DeferContext attaches a user message to this call's result; it enters the
// conversation at the next step, after all of the step's tool results.
func (c *Call) DeferContext(m llm.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deferred = append(c.deferred, m)
}

// ConcludeTurn marks a successful result as terminal for the turn: the
// driver sends no further request unless new input arrives.
func (c *Call) ConcludeTurn() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.concludes = true
}

// Output reports live progress ("stdout" or "stderr"). Text is batched and
// emitted as tool/output events at most every output interval, with a final
// flush when the body returns, which is recorded also when the call was
// cancelled. Output after the body returned is dropped.
func (c *Call) Output(stream, text string) {
	if c.out != nil {
		c.out.write(stream, text)
	}
}

// State returns the agent's tool state (file observations).
func (c *Call) State() *AgentState {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state == nil {
		c.state = NewAgentState() // a call built outside a scope
	}
	return c.state
}

func (c *Call) takeDeferred() ([]llm.Message, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.deferred
	c.deferred = nil
	return d, c.concludes
}
