package render

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"harness/internal/session"
)

// lastLine is the last non-empty line of s, for the collapsed reasoning
// row.
func lastLine(s string) string {
	s = strings.TrimRight(s, " \n\t")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return truncateText(s, 200)
}

// toolClass maps a tool name to its card kind.
func toolClass(name string) string {
	switch name {
	case "bash", "edit", "write", "read", "glob", "grep", "todo_write", "ask_user", "task":
		return name
	}
	return "generic"
}

// bashCommand reads the command of a bash call's arguments.
func bashCommand(args string) string {
	var a struct {
		Command string `json:"command"`
	}
	if json.Unmarshal([]byte(args), &a) != nil || a.Command == "" {
		return truncateText(args, 500)
	}
	return truncateText(a.Command, 2000)
}

func argField(args, field string) string {
	var m map[string]any
	if json.Unmarshal([]byte(args), &m) != nil {
		return ""
	}
	s, _ := m[field].(string)
	return s
}

func changePath(v *ToolItem) string {
	if v.Change != nil && v.Change.Path != "" {
		return v.Change.Path
	}
	return argField(v.Arguments, "file_path")
}

func compactSummary(v *ToolItem) string {
	switch {
	case v.Read != nil:
		return v.Read.Path
	case v.Search != nil:
		return v.Search.Pattern
	}
	for _, f := range []string{"file_path", "pattern", "path", "url"} {
		if s := argField(v.Arguments, f); s != "" {
			return truncateText(s, 200)
		}
	}
	return ""
}

func compactFigure(v *ToolItem) string {
	switch {
	case v.Read != nil && v.Read.TotalLines > 0:
		return fmt.Sprintf("lines %d–%d of %d", v.Read.StartLine, v.Read.EndLine, v.Read.TotalLines)
	case v.Search != nil:
		s := plural(v.Search.Matches, "match", "matches")
		if v.Search.Files > 0 {
			s += " in " + plural(v.Search.Files, "file", "files")
		}
		if v.Search.Truncated {
			s += " (truncated)"
		}
		return s
	}
	return ""
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// diffLine is one line of a unified diff with its CSS class.
type diffLine struct {
	Class string
	Text  string
}

// maxDiffLines bounds a rendered diff.
const maxDiffLines = 400

func diffLines(d string) []diffLine {
	lines := strings.Split(strings.TrimRight(d, "\n"), "\n")
	out := make([]diffLine, 0, min(len(lines), maxDiffLines+1))
	for i, l := range lines {
		if i == maxDiffLines {
			out = append(out, diffLine{Class: "dl-meta", Text: fmt.Sprintf("… %d more lines\n", len(lines)-i)})
			break
		}
		c := "dl-ctx"
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
			c = "dl-file"
		case strings.HasPrefix(l, "@@"):
			c = "dl-hunk"
		case strings.HasPrefix(l, "+"):
			c = "dl-add"
		case strings.HasPrefix(l, "-"):
			c = "dl-del"
		case strings.HasPrefix(l, `\`):
			c = "dl-meta"
		}
		out = append(out, diffLine{Class: c, Text: l + "\n"})
	}
	return out
}

// truncateText cuts s to at most n bytes on a rune boundary, marking the
// cut.
func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "… [" + strconv.Itoa(len(s)-cut) + " more bytes]"
}

// tailText keeps the last n bytes of s (live terminal output).
func tailText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := len(s) - n
	for cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut++
	}
	return "[… " + strconv.Itoa(cut) + " earlier bytes]\n" + s[cut:]
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

func answerFor(answers []session.Answer, id string) string {
	for _, a := range answers {
		if a.ID == id {
			return answerText(a)
		}
	}
	return "(no answer)"
}

func answerText(a session.Answer) string {
	parts := append([]string(nil), a.Selected...)
	if a.Custom != "" {
		parts = append(parts, a.Custom)
	}
	if len(parts) == 0 {
		return "(skipped)"
	}
	return strings.Join(parts, ", ")
}

func answersText(answers []session.Answer) string {
	parts := make([]string, 0, len(answers))
	for _, a := range answers {
		parts = append(parts, answerText(a))
	}
	return truncateText(strings.Join(parts, "; "), 300)
}

func todoMark(s session.TodoStatus) string {
	switch s {
	case session.TodoCompleted:
		return "✓"
	case session.TodoInProgress:
		return "▸"
	}
	return "○"
}

func todoCounts(todos []session.Todo) string {
	var done, doing int
	for _, t := range todos {
		switch t.Status {
		case session.TodoCompleted:
			done++
		case session.TodoInProgress:
			doing++
		}
	}
	s := fmt.Sprintf("%d/%d done", done, len(todos))
	if doing > 0 {
		s += fmt.Sprintf(", %d in progress", doing)
	}
	return s
}

func byText(by string) string {
	if by == "" {
		return ""
	}
	return " by " + by
}

func attemptText(retry, maxRetries int) string {
	if maxRetries > 0 {
		return strconv.Itoa(retry) + "/" + strconv.Itoa(maxRetries)
	}
	return strconv.Itoa(retry)
}

// duration formats milliseconds for people.
func duration(ms int64) string {
	switch {
	case ms < 0:
		return "0 ms"
	case ms < 1000:
		return strconv.FormatInt(ms, 10) + " ms"
	case ms < 60_000:
		return strconv.FormatFloat(float64(ms)/1000, 'f', 1, 64) + " s"
	}
	return fmt.Sprintf("%dm %02ds", ms/60_000, ms%60_000/1000)
}

// tokens formats a token count compactly (1.2k, 3.4M).
func tokens(n int64) string {
	switch {
	case n < 1000:
		return strconv.FormatInt(n, 10)
	case n < 1_000_000:
		return strconv.FormatFloat(float64(n)/1000, 'f', 1, 64) + "k"
	}
	return strconv.FormatFloat(float64(n)/1_000_000, 'f', 2, 64) + "M"
}

func inputName(i int) string { return "q" + strconv.Itoa(i) }

// approvalDetail is what an approval shows of the call: the command of a
// shell call, the path of a file call, else the raw arguments.
func approvalDetail(tool, args string) string {
	if args == "" {
		return ""
	}
	switch tool {
	case "bash":
		return bashCommand(args)
	case "write", "edit":
		if p := argField(args, "file_path"); p != "" {
			return p
		}
	}
	return truncateText(args, 2000)
}

// money formats a cost for people: cents once it is a cent or more, four
// decimals below (a short turn on a cheap route costs a fraction of one).
func money(v float64) string {
	if v >= 0.01 {
		return "$" + strconv.FormatFloat(v, 'f', 2, 64)
	}
	return "$" + strconv.FormatFloat(v, 'f', 4, 64)
}
