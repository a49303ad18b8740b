package fake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Limits of the demo's long:/think: rules.
const maxDemoChunks = 100_000

// NewDemo returns the offline demo model: a server whose Responder follows
// the rules in the package documentation. It lists the model "demo".
func NewDemo(opts ...Option) *Server {
	s := NewServer(Script{}, append([]Option{WithModels("demo")}, opts...)...)
	d := demo{delay: s.chunkDelay}
	s.script.Responder = d.reply
	return s
}

// demo holds the demo model's settings.
type demo struct {
	delay time.Duration
}

// demoTurn is what the demo reads from a request.
type demoTurn struct {
	msgs     []WireMessage
	last     int // index of the message to answer
	thinking bool
	rawSize  int
	tools    []string // the tools the request offers
}

func (d demo) reply(rec Recorded) Reply {
	t := demoTurn{msgs: rec.Messages(), last: -1, thinking: thinkingEnabled(rec.Body), rawSize: len(rec.Raw), tools: toolNames(rec.Body)}
	for i := len(t.msgs) - 1; i >= 0; i-- {
		m := t.msgs[i]
		if m.Role == "system" || (m.Role == "user" && isRuntimeContext(m.Text())) {
			continue
		}
		t.last = i
		break
	}
	switch rec.Header.Get("X-Harness-Purpose") {
	case "session-title":
		return d.finish(t, "", title(t.msgs), nil)
	case "compaction":
		return d.finish(t, "", summary(t.msgs), nil)
	}
	if t.last < 0 {
		return d.finish(t, "There is nothing to answer yet.", "Hello! This is the offline demo model. Send me a message.", nil)
	}
	if m := t.msgs[t.last]; m.Role == "tool" {
		return d.afterTool(t, m)
	}
	if m := t.msgs[t.last]; len(m.Images) > 0 {
		return d.describeImages(t, m)
	}
	return d.prompt(t, strings.TrimSpace(t.msgs[t.last].Text()))
}

// prompt applies the rules to the last user message.
func (d demo) prompt(t demoTurn, p string) Reply {
	rule, arg := cutRule(p)
	callID := "call_demo_" + strconv.Itoa(len(t.msgs))
	switch rule {
	case "run":
		if arg != "" {
			return d.call(t, "The user wants me to run `"+oneLine(arg)+"`. I'll use the bash tool.", callID, "bash",
				struct {
					Command     string `json:"command"`
					Description string `json:"description"`
				}{arg, "Run " + arg})
		}
	case "read":
		if arg != "" {
			return d.call(t, "I'll read `"+arg+"` with the read tool.", callID, "read",
				struct {
					FilePath string `json:"file_path"`
				}{arg})
		}
	case "write":
		path, content, _ := strings.Cut(arg, "\n")
		if path = strings.TrimSpace(path); path != "" {
			return d.call(t, "I'll write "+strconv.Itoa(len(content))+" bytes to `"+path+"`.", callID, "write",
				struct {
					FilePath string `json:"file_path"`
					Content  string `json:"content"`
				}{path, content})
		}
	case "ask":
		if arg != "" {
			type option struct {
				Label string `json:"label"`
			}
			type question struct {
				ID       string   `json:"id"`
				Question string   `json:"question"`
				Options  []option `json:"options"`
			}
			return d.call(t, "I should ask the user before going on.", callID, "ask_user",
				struct {
					Questions []question `json:"questions"`
				}{[]question{{"q1", arg, []option{{"yes"}, {"no"}}}}})
		}
	case "todo":
		type todo struct {
			Content string `json:"content"`
			Status  string `json:"status"`
		}
		var todos []todo
		for _, item := range strings.Split(arg, ";") {
			if item = strings.TrimSpace(item); item != "" {
				todos = append(todos, todo{item, "pending"})
			}
		}
		if len(todos) > 0 {
			return d.call(t, "I'll record "+strconv.Itoa(len(todos))+" todos.", callID, "todo_write",
				struct {
					Todos []todo `json:"todos"`
				}{todos})
		}
	case "call":
		return d.callRule(t, arg, callID)
	case "long":
		if n, ok := count(arg); ok {
			return d.long(t, n)
		}
	case "think":
		if n, ok := count(arg); ok {
			return d.think(t, n)
		}
	}
	return d.finish(t, "The user wrote "+strconv.Itoa(len(p))+" characters. No rule matches, so I'll quote the message back.",
		"This is the **offline demo model**: no real model was called.\n\nYou wrote:\n\n"+quote(p)+
			"\n\nTry one of these prompts:\n\n"+
			"- `run: ls -la` runs a shell command\n"+
			"- `read: README.md` reads a file\n"+
			"- `write: notes.txt` with the content on the next lines writes a file\n"+
			"- `ask: Shall I continue?` asks you a question\n"+
			"- `todo: plan; build; test` records a todo list\n"+
			"- `call: TOOL {\"json\": \"arguments\"}` calls any tool with those arguments\n"+
			"- `long: 200` or `think: 50` stream many chunks\n", nil)
}

// afterTool answers the tool result m for the call it answers.
func (d demo) afterTool(t demoTurn, m WireMessage) Reply {
	name, args := findCall(t.msgs[:t.last], m.ToolCallID)
	out := m.Text()
	failed := strings.HasPrefix(out, "Error")
	var a struct {
		Command  string `json:"command"`
		FilePath string `json:"file_path"`
		Todos    []struct {
			Content string `json:"content"`
		} `json:"todos"`
	}
	_ = json.Unmarshal([]byte(args), &a) // unreadable arguments leave the fields empty
	switch {
	case failed:
		return d.finish(t, "The "+name+" tool failed; I'll report the error.",
			"The `"+name+"` tool reported an error:\n\n"+fenced(out), nil)
	case name == "bash":
		return d.finish(t, "The command finished; I'll show its output.",
			"I ran `"+oneLine(a.Command)+"`. Output:\n\n"+fenced(strings.TrimRight(out, "\n")), nil)
	case name == "read":
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		head := lines[:min(5, len(lines))]
		return d.finish(t, "I read the file; I'll summarise it.",
			fmt.Sprintf("`%s` has %d lines. It starts with:\n\n%s", a.FilePath, len(lines), fenced(strings.Join(head, "\n"))), nil)
	case name == "write":
		return d.finish(t, "The file was written.", "Wrote `"+a.FilePath+"`. The tool said: "+oneLine(out), nil)
	case name == "ask_user":
		return d.finish(t, "The user answered; I'll confirm the choice.", answerText(out), nil)
	case name == "todo_write":
		var sb strings.Builder
		fmt.Fprintf(&sb, "Recorded %d todos:\n\n", len(a.Todos))
		for _, td := range a.Todos {
			sb.WriteString("- [ ] " + td.Content + "\n")
		}
		return d.finish(t, "The todo list is saved.", sb.String(), nil)
	default:
		return d.finish(t, "The "+name+" tool returned; I'll summarise its result.", summariseResult(name, out), nil)
	}
}

// callRule answers "call: TOOL {json}": a call of TOOL with exactly those
// arguments (none: {}), so any tool can be tried offline. A missing name,
// a tool the request does not offer, or arguments that are not JSON get a
// plain answer saying so, and no call.
func (d demo) callRule(t demoTurn, arg, id string) Reply {
	name, raw := arg, ""
	if i := strings.IndexAny(arg, " \t\r\n{[\""); i >= 0 {
		name, raw = arg[:i], strings.TrimSpace(arg[i:])
	}
	usage := "Write `call: TOOL {json arguments}`, for example `call: read {\"file_path\": \"README.md\"}`."
	if name == "" {
		return d.finish(t, "The call rule names no tool.", "Which tool should I call? "+usage, nil)
	}
	if len(t.tools) > 0 && !slices.Contains(t.tools, name) {
		return d.finish(t, "The session offers no tool named "+name+".",
			"There is no tool named `"+oneLine(name)+"` in this session, so I did not call anything. The tools offered are: `"+
				strings.Join(t.tools, "`, `")+"`.", nil)
	}
	if raw == "" {
		raw = "{}"
	}
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return d.finish(t, "The arguments are not valid JSON, so I won't call the tool.",
			"The arguments for `"+name+"` are not valid JSON ("+err.Error()+"), so I did not call it. "+usage, nil)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(raw)); err != nil {
		buf.Reset()
		buf.WriteString(raw)
	}
	return d.finish(t, "The user asked me to call `"+name+"` with their arguments.", "",
		[]ToolCall{{ID: id, Name: name, Arguments: buf.String(), Fragments: 4}})
}

// summariseResult describes a tool result: its size and its first lines.
func summariseResult(name, out string) string {
	const head = 20
	body := strings.TrimRight(out, "\n")
	lines := strings.Split(body, "\n")
	if body == "" {
		return "The `" + name + "` tool returned nothing."
	}
	s := fmt.Sprintf("The `%s` tool returned %d %s (%d bytes)", name, len(lines), plural(len(lines), "line", "lines"), len(out))
	if len(lines) <= head {
		return s + ":\n\n" + fenced(body)
	}
	return s + fmt.Sprintf(". The first %d:\n\n", head) + fenced(strings.Join(lines[:head], "\n")) +
		fmt.Sprintf("\n\n…and %d more lines.", len(lines)-head)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// toolNames lists the tools a request offers.
func toolNames(body map[string]any) []string {
	list, _ := body["tools"].([]any)
	var out []string
	for _, x := range list {
		tool, _ := x.(map[string]any)
		fn, _ := tool["function"].(map[string]any)
		if name, _ := fn["name"].(string); name != "" {
			out = append(out, name)
		}
	}
	return out
}

// call answers with reasoning and one tool call.
func (d demo) call(t demoTurn, reasoning, id, name string, args any) Reply {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(args); err != nil {
		buf.Reset()
		buf.WriteString("{}")
	}
	return d.finish(t, reasoning, "", []ToolCall{{ID: id, Name: name, Arguments: strings.TrimSpace(buf.String()), Fragments: 4}})
}

// finish builds a paced reply with deterministic usage.
func (d demo) finish(t demoTurn, reasoning, text string, calls []ToolCall) Reply {
	if !t.thinking {
		reasoning = ""
	}
	r := Reply{Reasoning: reasoning, Text: text, ToolCalls: calls, Delay: d.delay}
	r.Usage = d.usage(t, r.frames(0))
	return r
}

func (d demo) long(t demoTurn, n int) Reply {
	words := strings.Fields("lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor")
	frames := make([]Frame, n)
	for i := range frames {
		w := words[i%len(words)] + " "
		if (i+1)%40 == 0 {
			w = words[i%len(words)] + ".\n\n"
		}
		frames[i] = Frame{Text: w, Delay: d.delay}
	}
	r := Reply{Frames: frames}
	r.Usage = d.usage(t, frames)
	return r
}

func (d demo) think(t demoTurn, n int) Reply {
	frames := make([]Frame, 0, n+6)
	for i := range n {
		frames = append(frames, Frame{Reasoning: "Thought " + strconv.Itoa(i+1) + ". ", Delay: d.delay})
	}
	for _, s := range split("I thought in "+strconv.Itoa(n)+" steps.", 0) {
		frames = append(frames, Frame{Text: s, Delay: d.delay})
	}
	r := Reply{Frames: frames}
	r.Usage = d.usage(t, frames)
	return r
}

// usage is plausible and deterministic: about four bytes per token; every
// prompt but the newest message counts as a cache hit, in 64-token blocks.
func (d demo) usage(t demoTurn, frames []Frame) *Usage {
	u := Reply{}.usage(frames, t.rawSize)
	if t.last >= 0 && len(t.msgs) > 1 {
		fresh := int64(len(t.msgs[t.last].Text())/4 + 16)
		u.CacheHitTokens = max(0, (u.PromptTokens-fresh)/64*64)
	}
	return &u
}

// cutRule splits "rule: argument" for the known rules.
func cutRule(p string) (rule, arg string) {
	head, rest, ok := strings.Cut(p, ":")
	if !ok {
		return "", ""
	}
	switch r := strings.ToLower(strings.TrimSpace(head)); r {
	case "run", "read", "write", "ask", "todo", "call", "long", "think":
		if r == "write" {
			// The content starts on the next line and is kept verbatim.
			return r, strings.TrimLeft(rest, " \t")
		}
		return r, strings.TrimSpace(rest)
	}
	return "", ""
}

func count(s string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 1 {
		return 0, false
	}
	return min(n, maxDemoChunks), true
}

// isRuntimeContext recognises the driver's runtime-context snapshots, which
// follow the prompt and are not what the user asked.
func isRuntimeContext(text string) bool {
	t := strings.ToLower(strings.TrimSpace(text))
	return strings.HasPrefix(t, "current runtime context") || strings.HasPrefix(t, "runtime context") ||
		strings.HasPrefix(t, "<runtime-context")
}

func thinkingEnabled(body map[string]any) bool {
	th, _ := body["thinking"].(map[string]any)
	return th == nil || th["type"] != "disabled"
}

// findCall returns the name and arguments of the call with id.
func findCall(msgs []WireMessage, id string) (name, args string) {
	for i := len(msgs) - 1; i >= 0; i-- {
		for _, c := range msgs[i].ToolCalls {
			if c.ID == id {
				return c.Function.Name, c.Function.Arguments
			}
		}
	}
	return "unknown", ""
}

// answerText reads an ask_user result {"answers":[{"id","selected":[...]}]}.
func answerText(out string) string {
	var res struct {
		Answers []struct {
			ID       string   `json:"id"`
			Selected []string `json:"selected"`
		} `json:"answers"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Answers) == 0 || len(res.Answers[0].Selected) == 0 {
		return "I could not read a choice from your answer:\n\n" + fenced(out)
	}
	return "You chose **" + strings.Join(res.Answers[0].Selected, ", ") + "**."
}

func title(msgs []WireMessage) string {
	for _, m := range msgs {
		if m.Role == "user" && !isRuntimeContext(m.Text()) {
			words := strings.Fields(m.Text())
			return strings.Join(words[:min(6, len(words))], " ")
		}
	}
	return "Demo session"
}

// summary answers a compaction request. Harness ends those with an
// instruction to write a checkpoint; the latest request is the user message
// before it (kept short, so the checkpoint is smaller than what it
// replaces).
func summary(msgs []WireMessage) string {
	var lastUser string
	for _, m := range msgs {
		if m.Role == "user" && !isRuntimeContext(m.Text()) && !isCheckpointInstruction(m.Text()) && strings.TrimSpace(m.Text()) != "" {
			lastUser = m.Text()
		}
	}
	return fmt.Sprintf("Summary of the conversation so far (offline demo model): %d messages were exchanged. The latest request was:\n\n%s",
		len(msgs), quote(oneLineMax(lastUser, 200)))
}

func isCheckpointInstruction(text string) bool {
	return strings.Contains(text, "write a checkpoint of the conversation")
}

// oneLineMax keeps the first line of s, cut to n bytes.
func oneLineMax(s string, n int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "") + "…"
	}
	return s
}

func quote(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = "> " + l
	}
	return strings.Join(lines, "\n")
}

// fenced wraps s in a code fence longer than any backtick run inside it.
func fenced(s string) string {
	if s == "" {
		s = "(no output)"
	}
	fence := "```"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	return fence + "\n" + s + "\n" + fence
}

func oneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
