package builtin

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"regexp"
	"strings"

	"harness/internal/files"
	"harness/internal/tools"
	"harness/internal/tools/builtin/globpat"
)

const (
	grepMaxMatches   = 250
	grepMaxLineRunes = 500
)

type grepArgs struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
	Include string `json:"include"`
}

// grepMatch is one matching line.
type grepMatch struct {
	file string // relative to the workspace
	line int
	text string
}

// grepSearch is a backend: it returns up to limit matches and whether there
// were more.
type grepSearch func(ctx context.Context, wsReal string, root wsPath, re *regexp.Regexp, include *globpat.Pattern, limit int) ([]grepMatch, bool, error)

func grepTool(opts Options) tools.Definition {
	return tools.Definition{
		Name: ToolGrep,
		Description: `Search file contents in the workspace with a regular expression (RE2 syntax, as in Go or ripgrep: no backreferences or lookaround). Returns up to 250 matching lines grouped by file, each with its line number.

path limits the search to a directory or a single file (default: the workspace root). include filters files by a glob on the file name, e.g. "*.go" or "*.{ts,tsx}". Binary files and the .git directory are skipped. Use glob to find files by name.`,
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "minLength": 1, "description": "Regular expression to search for, e.g. \"func \\\\w+Handler\"."},
    "path": {"type": "string", "description": "File or directory to search, relative to the workspace (default: the workspace root)."},
    "include": {"type": "string", "description": "Only search files whose name matches this glob, e.g. \"*.go\"."}
  },
  "required": ["pattern"],
  "additionalProperties": false
}`),
		Access:  tools.AccessRead,
		Timeout: opts.SearchTimeout,
		Execute: func(ctx context.Context, call *tools.Call) (tools.Result, error) {
			return executeGrep(ctx, call, pickGrepBackend(opts, call.Env))
		},
	}
}

// pickGrepBackend resolves the configured backend; ripgrep is used only
// when it is on PATH, and runs in the agent's sandbox (env).
func pickGrepBackend(opts Options, env tools.Env) grepSearch {
	if opts.Grep == GrepGo {
		return grepGo
	}
	rg, err := exec.LookPath(opts.RipgrepPath)
	if err != nil {
		return grepGo
	}
	return func(ctx context.Context, wsReal string, root wsPath, re *regexp.Regexp, include *globpat.Pattern, limit int) ([]grepMatch, bool, error) {
		return grepRipgrep(ctx, env, rg, wsReal, root, re, include, limit)
	}
}

func executeGrep(ctx context.Context, call *tools.Call, search grepSearch) (tools.Result, error) {
	args, err := decodeArgs[grepArgs](call)
	if err != nil {
		return tools.Result{}, err
	}
	re, err := regexp.Compile(args.Pattern)
	if err != nil {
		return tools.Result{}, tools.Errorf(tools.NameToolArgs, CodeInvalidPattern, "invalid regular expression %q: %v", args.Pattern, err)
	}
	var include *globpat.Pattern
	if args.Include != "" {
		if include, err = globpat.Compile(args.Include); err != nil {
			return tools.Result{}, tools.Errorf(tools.NameToolArgs, CodeInvalidPattern, "invalid include glob: %v", err)
		}
	}
	_, wsReal, err := workspaceRoot(call.Env.Workspace())
	if err != nil {
		return tools.Result{}, err
	}
	root, err := resolvePath(call.Env.Workspace(), cmp.Or(args.Path, "."))
	if err != nil {
		return tools.Result{}, err
	}
	if err := statIn(root); err != nil {
		return tools.Result{}, err
	}
	matches, more, err := search(ctx, wsReal, root, re, include, grepMaxMatches)
	if err != nil {
		return tools.Result{}, err
	}
	text, files := formatGrep(matches, more)
	if len(matches) == 0 {
		text = fmt.Sprintf("No matches for %q in %s.", args.Pattern, root.Rel)
	}
	r := tools.TextResult(text)
	r.Meta = mustJSON(SearchMeta{Pattern: args.Pattern, Path: root.Rel, Matches: len(matches), Files: files, Truncated: more})
	return r, nil
}

// formatGrep groups matches by file (in the order found).
func formatGrep(matches []grepMatch, more bool) (string, int) {
	var sb strings.Builder
	files := 0
	for i, m := range matches {
		if i == 0 || matches[i-1].file != m.file {
			if i > 0 {
				sb.WriteByte('\n')
			}
			sb.WriteString(m.file)
			sb.WriteByte('\n')
			files++
		}
		text := strings.TrimRight(m.text, "\r\n")
		if len(text) > grepMaxLineRunes {
			if cut := runeOffset(text, grepMaxLineRunes); cut < len(text) {
				text = text[:cut] + " [... line truncated ...]"
			}
		}
		fmt.Fprintf(&sb, "  %d: %s\n", m.line, text)
	}
	if more {
		fmt.Fprintf(&sb, "\n(Showing the first %d matches; there are more. Narrow the pattern, path or include.)", len(matches))
	}
	return strings.TrimSuffix(sb.String(), "\n"), files
}

// includes reports whether a file passes the include glob: on its name, or
// on its path when the glob has a slash.
func includes(include *globpat.Pattern, rel string) bool {
	if include == nil {
		return true
	}
	if include.HasSlash() {
		return include.Match(rel)
	}
	return include.Match(path.Base(rel))
}

var errGrepLimit = errors.New("grep limit reached")

// grepGo is the pure Go backend.
func grepGo(ctx context.Context, wsReal string, root wsPath, re *regexp.Regexp, include *globpat.Pattern, limit int) ([]grepMatch, bool, error) {
	ws, err := os.OpenRoot(wsReal)
	if err != nil {
		return nil, false, fmt.Errorf("workspace %s is unavailable: %w", wsReal, err)
	}
	defer ws.Close()
	var out []grepMatch
	more := false
	err = walkFiles(ctx, ws, root, func(rel string, info fs.FileInfo) error {
		if !includes(include, rel) || info.Size() > maxFileBytes {
			return nil
		}
		content, err := readRegular(ws, rel, maxFileBytes)
		if err != nil || files.IsBinary(content) {
			return nil
		}
		line := 0
		for len(content) > 0 {
			line++
			end := bytes.IndexByte(content, '\n')
			var l []byte
			if end < 0 {
				l, content = content, nil
			} else {
				l, content = content[:end], content[end+1:]
			}
			if !re.Match(l) {
				continue
			}
			if len(out) == limit {
				more = true
				return errGrepLimit
			}
			out = append(out, grepMatch{file: rel, line: line, text: string(l)})
		}
		return nil
	})
	if err != nil && !errors.Is(err, errGrepLimit) {
		return nil, false, err
	}
	return out, more, nil
}

// statIn checks, through the workspace root, that the search path exists
// (and still leads nowhere outside).
func statIn(p wsPath) error {
	ws, err := openWorkspace(p)
	if err != nil {
		return err
	}
	defer ws.Close()
	if _, err := ws.Stat(p.name()); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return tools.Errorf(NameFs, CodeFsNotFound, "path %q does not exist", p.Rel)
		}
		return fsError(p, err)
	}
	return nil
}
