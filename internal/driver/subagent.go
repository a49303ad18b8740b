package driver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"harness/internal/llm"
	"harness/internal/session"
	"harness/internal/tools"
)

// Subagents: the task tool delegates a sub-task to a child agent. The
// child is a real session (its own log, stored with the parent's owner,
// workspace and sandbox, linked by ParentID and kind "subagent"); the
// prompt is its first message, it runs one turn, and its final answer is
// the call's result. docs/lifecycle.md "Subagents" has the rules and where
// they differ from upstream's subagent tool.

// TaskToolName is the name of the tool that starts a subagent.
const TaskToolName = "task"

// maxSubagents is how many subagents one parent runs at once; more
// calls wait for a slot (their turn can still be cancelled).
const maxSubagents = 3

// ChildSessions stores the sessions of subagents (driverstore, wired by
// app): the driver runs them but does not own session rows.
type ChildSessions interface {
	// CreateChild stores a new child session of parent with the parent's
	// owner, workspace and sandbox and returns the metadata its agent
	// starts from (Subagent set, Parent the parent's id).
	CreateChild(ctx context.Context, parent string, c ChildSpec) (Meta, error)
}

// ChildSpec is what the driver chooses for a child session.
type ChildSpec struct {
	ID       string
	Title    string
	Provider string
	Model    string
	Mode     session.PermissionMode
}

// Subagent error codes of the task tool's results.
const (
	NameSubagent            = "SubagentError"
	CodeSubagentDepth       = "SUBAGENT_DEPTH"
	CodeSubagentTools       = "SUBAGENT_TOOLS"
	CodeSubagentUnavailable = "SUBAGENT_UNAVAILABLE"
	CodeSubagentFailed      = "SUBAGENT_FAILED"
	CodeSubagentAborted     = "SUBAGENT_ABORTED"
)

// Limits of the task tool's arguments.
const (
	maxTaskDescription = 200
	maxTaskPrompt      = 64 << 10
)

// taskSchema and taskDescription are short: every request of every
// session carries them.
var taskSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"description":{"type":"string","minLength":1,"maxLength":200,"description":"3-5 words, shown to the user"},` +
	`"prompt":{"type":"string","minLength":1,"maxLength":65536,"description":"The whole task; the subagent sees nothing else"},` +
	`"tools":{"type":"array","items":{"type":"string"},"description":"Tool names it may use (default: all it may have)"}},` +
	`"required":["description","prompt"],"additionalProperties":false}`)

const taskDescription = "Delegate a self-contained sub-task (research, reading many files) to a subagent working in this workspace; its final answer is the result. Independent tasks can run at once. Read-only unless the session is in auto mode."

// taskDefinition is the task tool; its body finds the calling agent
// through the call's environment (one definition serves every agent of
// the registry).
func taskDefinition() tools.Definition {
	return tools.Definition{
		Name:        TaskToolName,
		Description: taskDescription,
		Parameters:  taskSchema,
		// What the child may do is bounded by the parent's mode (read-only
		// tools unless it is auto), so starting one needs no approval of
		// its own: the call is no more than the reads it delegates.
		Access:          tools.AccessRead,
		ConcurrencySafe: func(json.RawMessage) bool { return true },
		Execute: func(ctx context.Context, call *tools.Call) (tools.Result, error) {
			env, ok := call.Env.(*toolEnv)
			if !ok {
				return tools.Result{}, tools.Errorf(NameSubagent, CodeSubagentUnavailable, "subagents are not available here")
			}
			return env.a.runTask(ctx, env, call)
		},
	}
}

type taskArgs struct {
	Description string   `json:"description"`
	Prompt      string   `json:"prompt"`
	Tools       []string `json:"tools"`
}

// subagentDenied are tools a child never gets: it cannot start its own
// subagents (depth 1), and nobody answers its questions or reads its todo
// list.
func subagentDenied(d tools.Definition) bool {
	return d.Name == TaskToolName || d.Access == tools.AccessInteract
}

// childMode is the permission mode a child runs with: the parent's auto
// mode, else read-only. In ask mode every write of the child would need a
// person's approval in a transcript nobody drives; read-only keeps the
// child within what the parent may do without asking.
func childMode(parent session.PermissionMode) session.PermissionMode {
	if parent == session.ModeAuto {
		return session.ModeAuto
	}
	return session.ModeReadOnly
}

// childTools are the tools a child of a is offered in mode: the globals a
// sees, without the denied ones and, unless auto, only read tools;
// narrowed to want when given. A name in want that is not available is an
// error the model can read.
func (a *Agent) childTools(mode session.PermissionMode, want []string) ([]string, error) {
	var avail []string
	for _, s := range a.m.tools.NewScope().Schemas() {
		d, ok := a.scope.Lookup(s.Name)
		if !ok || subagentDenied(d) {
			continue
		}
		if mode != session.ModeAuto && d.Access != tools.AccessRead {
			continue
		}
		avail = append(avail, s.Name)
	}
	if want == nil {
		return avail, nil
	}
	out := make([]string, 0, len(want))
	for _, n := range want {
		if !slices.Contains(avail, n) {
			return nil, tools.Errorf(NameSubagent, CodeSubagentTools,
				"the subagent cannot have the tool %q in this session (mode %s); it may have: %s", n, mode, strings.Join(avail, ", "))
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out, nil
}

// runTask is the task tool's body on the parent agent a.
func (a *Agent) runTask(ctx context.Context, env *toolEnv, call *tools.Call) (tools.Result, error) {
	if a.subagent {
		return tools.Result{}, tools.Errorf(NameSubagent, CodeSubagentDepth, "a subagent cannot start subagents of its own")
	}
	children := a.m.opts.Children
	if children == nil {
		return tools.Result{}, tools.Errorf(NameSubagent, CodeSubagentUnavailable, "subagents are not available on this server")
	}
	var args taskArgs
	if err := json.Unmarshal(call.Args, &args); err != nil {
		return tools.Result{}, fmt.Errorf("read the arguments: %w", err)
	}
	desc := oneLineText(args.Description, maxTaskDescription)
	prompt := strings.TrimSpace(args.Prompt)
	if desc == "" || prompt == "" || len(prompt) > maxTaskPrompt {
		return tools.Result{}, tools.Errorf(tools.NameToolArgs, tools.CodeInvalidArgs, "description and prompt must not be empty (prompt at most %d KiB)", maxTaskPrompt>>10)
	}
	mode := childMode(a.log.State().Mode)
	names, err := a.childTools(mode, args.Tools)
	if err != nil {
		return tools.Result{}, err
	}

	select {
	case a.taskSlots <- struct{}{}:
	case <-ctx.Done():
		return tools.Result{}, errTaskAborted()
	}
	defer func() { <-a.taskSlots }()

	child, release, err := a.spawn(ctx, desc, mode, names)
	if err != nil {
		if ctx.Err() != nil {
			return tools.Result{}, errTaskAborted()
		}
		a.logger.Warn("start subagent", "err", err)
		return tools.Result{}, tools.Errorf(NameSubagent, CodeSubagentUnavailable, "the subagent could not be started")
	}
	defer release()
	meta := session.SubagentMeta{Session: child.id, Description: desc}
	if err := env.Emit(ctx, session.TypeSubagentStarted, session.SubagentStarted{
		Turn: call.Turn, Step: call.Step, CallID: call.ID, Session: child.id, Description: desc, Tools: names, Mode: mode,
	}); err != nil {
		a.logger.Warn("log subagent start", "child", child.id, "err", err)
	}

	msg := llm.UserText(prompt, llm.Source{Kind: llm.SourceAgent, Session: a.id, CallID: call.ID})
	// A cancel of the parent's turn reaches the child's turn; the body
	// waits for the child to wind down, so nothing outlives the call.
	stop := context.AfterFunc(ctx, func() {
		child.Cancel(session.CancelCause{Kind: session.CauseParent}, false)
	})
	defer stop()
	if err := child.sendTask(ctx, msg); err != nil && !errors.Is(err, ErrNotDurable) {
		return withMeta(tools.Result{}, meta), tools.Errorf(NameSubagent, CodeSubagentUnavailable, "the subagent could not be given its task")
	}
	<-child.WhenIdle()

	out := lastTurnOutcome(child.log)
	meta.Reason, meta.Requests, meta.Cost, meta.Priced = out.reason.Kind, out.requests, out.cost, out.priced
	if out.requests > 0 {
		u := out.usage
		meta.Usage = &u
	}
	res := withMeta(tools.TextResult(out.text), meta)
	switch {
	case ctx.Err() != nil:
		return res, errTaskAborted()
	case out.reason.Kind == session.ReasonCompleted || out.reason.Kind == session.ReasonMaxTokens:
		if strings.TrimSpace(out.text) == "" {
			res.Content = []llm.ContentBlock{llm.Text("(the subagent finished without an answer)")}
		}
		return res, nil
	case out.reason.Kind == session.ReasonAborted:
		return res, tools.Errorf(NameSubagent, CodeSubagentAborted, "the subagent was stopped before it answered")
	default:
		msg := "the subagent's turn ended " + string(out.reason.Kind)
		if f := out.reason.Error; f != nil {
			msg += ": " + string(f.Code) + " " + f.Message
		}
		return res, tools.Errorf(NameSubagent, CodeSubagentFailed, "%s", msg)
	}
}

// spawn stores and starts the child session (idle, pinned until release).
func (a *Agent) spawn(ctx context.Context, title string, mode session.PermissionMode, names []string) (*Agent, func(), error) {
	cfg := a.defaults
	if m := a.log.State().Model; m != nil {
		cfg.Provider, cfg.Model = m.Provider, m.Model
	}
	meta, err := a.m.opts.Children.CreateChild(ctx, a.id, ChildSpec{
		ID: llm.NewID(), Title: title, Provider: cfg.Provider, Model: cfg.Model, Mode: mode,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("store the child session: %w", err)
	}
	meta.Subagent, meta.Parent = true, a.id
	child, err := a.m.installLeased(ctx, meta.ID, func() (*Agent, error) {
		h := meta.Header
		h.ID = meta.ID
		if h.CreatedAt == 0 {
			h.CreatedAt = a.m.clock()
		}
		l := session.New(h, session.Options{Clock: a.m.clock, Sink: a.m.sink(meta.ID)})
		c := a.m.newAgent(meta, l)
		c.parent = a
		c.scope.Restrict(names, nil)
		return c, nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("start the child agent: %w", err)
	}
	_, release, err := a.m.Pin(ctx, child.id)
	if err != nil {
		return nil, nil, fmt.Errorf("pin the child agent: %w", err)
	}
	if err := child.SetMode(ctx, mode, nil); err != nil {
		release()
		return nil, nil, fmt.Errorf("child mode: %w", err)
	}
	if e := a.log.State().Effort; e != nil {
		if err := child.SetEffort(ctx, e.Effort, nil); err != nil {
			release()
			return nil, nil, fmt.Errorf("child effort: %w", err)
		}
	}
	return child, release, nil
}

// sendTask gives a child its task: the one input a subagent takes.
func (a *Agent) sendTask(ctx context.Context, msg llm.Message) error {
	_, err := a.enqueue(ctx, msg, session.TargetNextTurn, true)
	return err
}

// turnOutcome is what a child's last turn left: its end, its final
// assistant text and the usage of its model requests.
type turnOutcome struct {
	reason   session.TurnEndReason
	text     string
	usage    llm.Usage
	requests int
	cost     float64
	priced   int
}

// lastTurnOutcome reads the last turn of l (from its last turn/start).
func lastTurnOutcome(l *session.Log) turnOutcome {
	out := turnOutcome{reason: session.TurnEndReason{Kind: session.ReasonInterrupted}}
	start := l.Len() - 1
	for ; start >= 0; start-- {
		if ev, ok := l.Event(start); ok && ev.Type == session.TypeTurnStart {
			break
		}
	}
	for _, ev := range l.Events(max(start, 0), l.Len()) {
		switch ev.Type {
		case session.TypeAssistantMessage:
			am, err := session.Decode[session.AssistantMessage](ev)
			if err != nil {
				continue
			}
			if am.Usage != nil {
				out.usage = out.usage.Add(*am.Usage)
				out.requests++
				if am.Price != nil {
					out.cost += am.Price.Cost(*am.Usage)
					out.priced++
				}
			}
			if t := am.Message.Text(); strings.TrimSpace(t) != "" {
				out.text = t
			}
		case session.TypeTurnEnd:
			if te, err := session.Decode[session.TurnEnd](ev); err == nil {
				out.reason = te.Reason
			}
		}
	}
	return out
}

// errTaskAborted is the result of a task call whose turn was cancelled:
// the pipeline's aborted result, saying the child was stopped too.
func errTaskAborted() error {
	return tools.Errorf(tools.NameAbort, session.CodeToolAborted, "tool call aborted; the subagent was stopped")
}

// withMeta sets the task result's presentation meta.
func withMeta(r tools.Result, m session.SubagentMeta) tools.Result {
	b, err := json.Marshal(map[string]session.SubagentMeta{"subagent": m})
	if err == nil {
		r.Meta = b
	}
	return r
}

// oneLineText trims s to one line of at most n bytes (on a rune boundary).
func oneLineText(s string, n int) string {
	return tools.CutRunes(strings.Join(strings.Fields(s), " "), n)
}

// subagentSection tells a child what it is and who reads its answer.
var subagentSection = Section{Name: "harness:subagent", Order: OrderToolGuidance + 90, Text: "You are a subagent: another agent gave you the task in the first message and reads only your final answer. Work on your own (nobody answers questions), then end with a complete, self-contained answer."}
