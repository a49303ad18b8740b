package importer

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"harness/internal/llm"
	"harness/internal/session"
)

// Result is an imported log and what a new session needs from it.
type Result struct {
	Format Format
	// Header is the log's metadata as Harness keeps it: CreatedAt from a
	// DeepSeek Harness header (0 when there is none). ID, Cwd, parent and
	// seed length are the new session's, so the caller sets them.
	Header session.Header
	// Events are contiguous from seq 0, pass session.Load and
	// session.CheckInvariants, and end outside any turn.
	Events []session.Event
	// Title is the log's last session/title ("" when none).
	Title string
	// FirstPrompt is the start (at most firstPromptBytes) of the text of
	// the first message a person wrote ("" when none): enough to title a
	// session, without keeping a huge prompt twice.
	FirstPrompt string
	// Route is the log's last model selection: its last model/selected, else
	// its last request's route (a DeepSeek Harness provider id mapped to
	// Harness's, e.g. deepseek-official → deepseek). Zero when none.
	Route Route
	// Mode is the log's last permission mode (Harness permission/mode, or a
	// DeepSeek Harness permission/preset or sandbox/mode: read-only →
	// read-only, workspace-write → ask, danger-full-access → auto); "" when
	// the log names none.
	Mode session.PermissionMode
	// DelegatedApprovals is set when the log's approval policy in force is
	// "never" inherited from a parent session (DeepSeek Harness subagents:
	// {policy: never, source: delegation}); imported, the session has no
	// parent and its owner answers approvals.
	DelegatedApprovals bool
	// Closed counts the closing events added for a turn or a compaction
	// bracket left open.
	Closed int
	// Notes say what was changed or dropped on the way.
	Notes []string
}

// Route is a provider and a model.
type Route struct {
	Provider string
	Model    string
}

// providerAliases map DeepSeek Harness provider ids to Harness's.
var providerAliases = map[string]string{"deepseek-official": "deepseek"}

// presetModes map DeepSeek Harness permission presets and sandbox modes to
// Harness permission modes.
var presetModes = map[string]session.PermissionMode{
	"read-only":          session.ModeReadOnly,
	"workspace-write":    session.ModeAsk,
	"danger-full-access": session.ModeAuto,
}

// validate appends the events to a fresh log (the checks session.Load
// makes, one event at a time so a refusal names its line) and runs the
// invariant checker; then it closes a turn left open as crash repair does.
// It returns the stored events and how many closers were added. It
// clears items as it goes.
func validate(items []item) ([]session.Event, int, error) {
	var now int64
	l := session.New(session.Header{}, session.Options{Clock: func() int64 { return now }})
	var (
		chk   session.Checker
		calls map[string]bool // tool/call ids of the open step, for a clearer message
	)
	add := func(ev session.Event, line int) error {
		now = ev.Time
		stored, err := l.AppendRaw(ev)
		if err != nil {
			return logErr(line, err)
		}
		if err := chk.Check(stored); err != nil {
			if stored.Type == session.TypeToolResult {
				if tr, derr := session.Decode[session.ToolResult](stored); derr == nil && !calls[tr.Message.Source.CallID] {
					return &Error{Code: CodeInvalid, Line: line, Err: err,
						Reason: `tool/result cites call "` + tr.Message.Source.CallID + `" that no tool/call opened`}
				}
			}
			return logErr(line, err)
		}
		switch stored.Type {
		case session.TypeStepStart, session.TypeStepEnd:
			calls = map[string]bool{}
		case session.TypeToolCall:
			if tc, err := session.Decode[session.ToolCall](stored); err == nil && calls != nil {
				calls[tc.CallID] = true
			}
		}
		return nil
	}
	lastLine := 0
	if len(items) > 0 {
		lastLine = items[len(items)-1].line
	}
	for i := range items {
		if err := add(items[i].ev, items[i].line); err != nil {
			return nil, 0, err
		}
		// The log keeps its own compact copy: the read one can go now,
		// not once the whole log is validated.
		items[i] = item{}
	}
	events := l.Events(0, l.Len())
	drafts := session.RepairClosers(events)
	if len(drafts) == 0 {
		return events, 0, nil
	}
	at := events[len(events)-1].Time
	for _, d := range drafts {
		raw, err := json.Marshal(d.Data)
		if err != nil {
			return nil, 0, &Error{Code: CodeInvalid, Line: lastLine, Reason: "close the open turn: " + err.Error(), Err: err}
		}
		ev := session.Event{Type: d.Type, Time: at, Data: raw, SurfaceOp: d.SurfaceOp, SourceEventSeqs: d.SourceEventSeqs}
		if err := add(ev, lastLine); err != nil {
			return nil, 0, err
		}
	}
	return l.Events(0, l.Len()), len(drafts), nil
}

// summarize reads what a new session needs from the validated events.
func summarize(format Format, events []session.Event) *Result {
	res := &Result{Format: format, Events: events}
	selected := false
	setRoute := func(provider, model string) {
		if format == FormatDSH {
			if p, ok := providerAliases[provider]; ok {
				provider = p
			}
		}
		res.Route = Route{Provider: provider, Model: model}
	}
	for _, ev := range events {
		switch ev.Type {
		case session.TypeSessionTitle:
			if v, err := session.Decode[session.SessionTitle](ev); err == nil && strings.TrimSpace(v.Title) != "" {
				res.Title = v.Title
			}
		case session.TypeUserMessage:
			if res.FirstPrompt != "" {
				continue
			}
			if m, err := session.Decode[llm.Message](ev); err == nil && m.Source.Kind == llm.SourceUser {
				res.FirstPrompt = promptStart(strings.TrimSpace(m.Text()))
			}
		case session.TypeModelSelected:
			if v, err := session.Decode[session.ModelSelected](ev); err == nil {
				selected = true
				setRoute(v.Provider, v.Model)
			}
		case session.TypeRequestContext:
			if v, err := session.Decode[session.RequestContext](ev); err == nil && !selected {
				setRoute(v.Provider, v.Model)
			}
		case session.TypeRequestHeader:
			if v, err := session.Decode[session.RequestHeader](ev); err == nil && !selected {
				setRoute(v.Header.Config.Provider, v.Header.Config.Model)
			}
		case session.TypeApprovalPolicy:
			var v struct {
				Policy string `json:"policy"`
				Source string `json:"source"`
			}
			if json.Unmarshal(ev.Data, &v) == nil {
				res.DelegatedApprovals = format == FormatDSH && v.Policy == "never" && v.Source == "delegation"
			}
		case session.TypePermissionMode:
			if v, err := session.Decode[session.PermissionModeSet](ev); err == nil {
				res.Mode = v.Mode
			}
		case "permission/preset", "sandbox/mode":
			if format != FormatDSH {
				continue
			}
			var v struct {
				Preset string `json:"preset"`
				Mode   string `json:"mode"`
			}
			if json.Unmarshal(ev.Data, &v) == nil {
				if m, ok := presetModes[v.Preset+v.Mode]; ok {
					res.Mode = m
				}
			}
		}
	}
	if res.Route.Provider == "unknown" {
		res.Route = Route{}
	}
	return res
}

// firstPromptBytes bounds Result.FirstPrompt.
const firstPromptBytes = 1 << 10

// promptStart is a copy of the first firstPromptBytes of s, cut at a rune
// boundary.
func promptStart(s string) string {
	if len(s) <= firstPromptBytes {
		return s
	}
	n := firstPromptBytes
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return strings.Clone(s[:n])
}
