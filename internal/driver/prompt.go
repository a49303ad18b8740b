package driver

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"harness/internal/llm"
	"harness/internal/session"
	"harness/internal/tools"
)

// Section orders, following the upstream conventions.
const (
	OrderIdentity     = -100
	OrderToolGuidance = 100
	OrderPermission   = 115
)

const identityText = `You are Harness, an AI agent that works in the user's workspace through tools.
The workspace directory is {{cwd}}. You are running on {{provider}}/{{model}}.
Work step by step: inspect before you change, keep changes small, and check the result of every command.
When you need a decision only the user can make, ask with the ask_user tool.`

const toolGuidanceText = `Tool use:
- File paths are relative to the workspace; tools refuse paths outside it.
- Read a file before you edit or overwrite it.
- A bash result ends with [exit code: N] when the command failed; read it before going on.
- Keep a todo list with todo_write for work with several steps.`

// snapshotPreamble heads every runtime-context snapshot message.
const snapshotPreamble = "Current runtime context. This snapshot supersedes earlier runtime-context snapshots."

// noContextText is sent once when runtime contexts disappear.
const noContextText = "Current runtime context: none. Earlier runtime-context snapshots no longer apply."

// assemble builds the step's system prompt sections, runtime contexts and
// tool schemas, then runs system-prompt/assemble.
func (a *Agent) assemble(ctx context.Context) (*Assembly, error) {
	a.syncSessionTools(ctx)
	cfg := a.seedConfig()
	var omit tools.Access
	if env := (&toolEnv{a: a}); !env.Network(ctx) {
		omit = tools.AccessNetwork
	}
	base := &Assembly{
		Sections: []Section{
			{Name: "harness:identity", Order: OrderIdentity, Text: identityText},
			{Name: "harness:tools", Order: OrderToolGuidance, Text: toolGuidanceText},
		},
		Contexts: []Section{permissionContext(a.log.State().Mode)},
		Tools:    a.scope.SchemasWithout(omit),
		Vars:     map[string]string{"cwd": a.workspace, "provider": cfg.Provider, "model": cfg.Model},
	}
	if a.subagent {
		base.Sections = append(base.Sections, subagentSection)
	}
	hooks := snapshot(a.m.hooks, &a.hooks, func(h *Hooks) []entry[AssembleHook] { return h.assemble })
	return waterfall(ctx, "system-prompt/assemble", hooks, base, func(context.Context) (*Assembly, error) { return base, nil })
}

func permissionContext(mode session.PermissionMode) Section {
	var text string
	switch mode {
	case session.ModeReadOnly:
		text = "Permission mode: read-only. Tools that write files or run commands are refused; only reading and searching work. Tell the user what you would change instead."
	case session.ModeAuto:
		text = "Permission mode: auto. File writes and shell commands run without asking the user."
	default:
		text = "Permission mode: ask. File writes and shell commands wait for the user's approval; a denial means the user said no."
	}
	return Section{Name: "permission:mode", Order: OrderPermission, Text: text}
}

var varPattern = regexp.MustCompile(`\{\{([^{}]*)\}\}`)
var varName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// renderSections sorts sections by order, interpolates strict {{name}}
// variables (unknown or empty → error naming the variable and section),
// drops empty sections and joins them with a blank line.
func renderSections(sections []Section, vars map[string]string) (string, error) {
	sorted := append([]Section(nil), sections...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Order < sorted[j].Order })
	var parts []string
	for _, s := range sorted {
		text, err := interpolate(s, vars)
		if err != nil {
			return "", err
		}
		if strings.TrimSpace(text) != "" {
			parts = append(parts, text)
		}
	}
	return strings.Join(parts, "\n\n"), nil
}

func interpolate(s Section, vars map[string]string) (string, error) {
	var firstErr error
	out := varPattern.ReplaceAllStringFunc(s.Text, func(m string) string {
		name := strings.TrimSpace(m[2 : len(m)-2])
		if !varName.MatchString(name) {
			if firstErr == nil {
				firstErr = &llm.Failure{Code: CodePrompt, Message: fmt.Sprintf("section %s: malformed variable %q", s.Name, m)}
			}
			return m
		}
		v, ok := vars[name]
		if !ok || v == "" {
			if firstErr == nil {
				firstErr = &llm.Failure{Code: CodePrompt, Message: fmt.Sprintf("section %s: variable {{%s}} has no value", s.Name, name)}
			}
			return m
		}
		return v
	})
	return out, firstErr
}

// preStep runs agent/pre-step. The session is flushed first (a checkpoint:
// the claim and everything before it are durable before any hook works on
// the step). The default enters the claimed messages plus a runtime-context
// snapshot when the contexts changed since the snapshot the model last saw:
// the snapshot is offered at every step, so a step that enters only a
// snapshot is possible (upstream §3.2 a, §5.6).
func (a *Agent) preStep(ctx context.Context, turn, step int, claimed []llm.Message, asm *Assembly) (PreStepDecision, error) {
	if err := a.m.store.Flush(ctx, a.id); err != nil {
		if ctx.Err() != nil {
			return PreStepDecision{}, ctx.Err()
		}
		return PreStepDecision{}, &llm.Failure{Code: CodePersistence, Message: fmt.Sprintf("session not durable at pre-step: %v", err)}
	}
	p := &PreStepPayload{Agent: a, Turn: turn, Step: step, Messages: claimed}
	hooks := snapshot(a.m.hooks, &a.hooks, func(h *Hooks) []entry[PreStepHook] { return h.preStep })
	return waterfall(ctx, "agent/pre-step", hooks, p, func(context.Context) (PreStepDecision, error) {
		msgs := append([]llm.Message(nil), p.Messages...)
		snap, err := a.contextSnapshot(asm)
		if err != nil {
			return PreStepDecision{}, err
		}
		if snap != nil {
			msgs = append(msgs, *snap)
		}
		return Enter(msgs), nil
	})
}

// contextSnapshot returns the runtime-context message to enter, or nil when
// the model already has the current one on the surface.
func (a *Agent) contextSnapshot(asm *Assembly) (*llm.Message, error) {
	text, err := renderSections(asm.Contexts, asm.Vars)
	if err != nil {
		return nil, err
	}
	last, seen := a.lastSnapshotText()
	var want string
	switch {
	case text != "":
		want = snapshotPreamble + "\n\n" + text
	case seen && last != noContextText:
		want = noContextText
	default:
		return nil, nil
	}
	if seen && last == want {
		return nil, nil
	}
	msg := llm.UserText(want, llm.Source{Kind: llm.SourcePlugin, Plugin: llm.PluginRuntimeContext, Form: llm.FormSnapshot})
	return &msg, nil
}

// lastSnapshotText finds the newest runtime-context snapshot on the surface
// (a replacement that shadowed it makes the next step re-send it).
func (a *Agent) lastSnapshotText() (string, bool) {
	msgs := a.log.History()
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Source.Kind == llm.SourcePlugin && m.Source.Plugin == llm.PluginRuntimeContext {
			return m.Text(), true
		}
	}
	return "", false
}

// maybeTitle gives an untitled session a fallback title from its first
// prompt (the first words, at most 80 bytes).
func (a *Agent) maybeTitle(entered []llm.Message) {
	if a.log.State().Title != "" {
		return
	}
	for _, m := range entered {
		if m.Source.Kind != llm.SourceUser {
			continue
		}
		title := fallbackTitle(m.Text())
		if title == "" {
			return
		}
		if _, err := a.log.Append(session.TypeSessionTitle, session.SessionTitle{Title: title, Source: session.TitleFallback}); err != nil {
			a.logger.Warn("title", "session", a.id, "err", err)
			return
		}
		a.m.live.publish(LiveEvent{Kind: LiveTitle, Session: a.id})
		return
	}
}

func fallbackTitle(text string) string {
	words := strings.Fields(text)
	if len(words) > 6 {
		words = words[:6]
	}
	t := strings.Join(words, " ")
	for len(t) > 80 {
		r := []rune(t)
		t = string(r[:len(r)-1])
	}
	return t
}
