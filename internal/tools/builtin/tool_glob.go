package builtin

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"harness/internal/tools"
	"harness/internal/tools/builtin/globpat"
)

const globMaxResults = 100

type globArgs struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
}

// SearchMeta is the presentation data of glob and grep results.
type SearchMeta struct {
	Pattern   string `json:"pattern"`
	Path      string `json:"path"`
	Matches   int    `json:"matches"`
	Files     int    `json:"files,omitempty"`
	Truncated bool   `json:"truncated"`
}

func globTool(opts Options) tools.Definition {
	return tools.Definition{
		Name: ToolGlob,
		Description: `Find files in the workspace by name pattern. Returns up to 100 matching file paths (relative to the workspace), newest first.

Patterns: "*" and "?" match within a path segment, "**" matches any number of directories, "{a,b}" lists alternatives, "[...]" a character class. A pattern without "/" matches file names at any depth ("*.go"); with "/" it matches the path relative to the search directory ("src/**/*.ts"). The .git directory is skipped. Use grep to search file contents.`,
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "minLength": 1, "description": "Glob pattern, e.g. \"**/*.go\" or \"*.{ts,tsx}\"."},
    "path": {"type": "string", "description": "Directory to search, relative to the workspace (default: the workspace root)."}
  },
  "required": ["pattern"],
  "additionalProperties": false
}`),
		Access:  tools.AccessRead,
		Timeout: opts.SearchTimeout,
		Execute: executeGlob,
	}
}

func executeGlob(ctx context.Context, call *tools.Call) (tools.Result, error) {
	args, err := decodeArgs[globArgs](call)
	if err != nil {
		return tools.Result{}, err
	}
	root, err := resolvePath(call.Env.Workspace(), cmp.Or(args.Path, "."))
	if err != nil {
		return tools.Result{}, err
	}
	pattern := args.Pattern
	if filepath.IsAbs(pattern) {
		// An absolute pattern must point into the search directory.
		rel, ok := strings.CutPrefix(filepath.ToSlash(pattern), filepath.ToSlash(root.Abs)+"/")
		if !ok {
			return tools.Result{}, tools.Errorf(NameWorkspace, CodePathOutsideWorkspace, "pattern %q is outside the search directory %q; use a pattern relative to it", pattern, root.Rel)
		}
		pattern = rel
	}
	pat, err := globpat.Compile(pattern)
	if err != nil {
		return tools.Result{}, tools.Errorf(tools.NameToolArgs, CodeInvalidPattern, "invalid glob pattern: %v", err)
	}

	type hit struct {
		rel   string
		mtime time.Time
	}
	if err := statIn(root); err != nil {
		return tools.Result{}, err
	}
	ws, err := openWorkspace(root)
	if err != nil {
		return tools.Result{}, err
	}
	defer ws.Close()
	var hits []hit
	prefix := root.Rel + "/"
	err = walkFiles(ctx, ws, root, func(rel string, info fs.FileInfo) error {
		name := strings.TrimPrefix(rel, prefix)
		if root.Rel == "." {
			name = rel
		}
		if !pat.HasSlash() {
			name = path.Base(rel)
		}
		if pat.Match(name) {
			hits = append(hits, hit{rel, info.ModTime()})
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return tools.Result{}, err
		}
		return tools.Result{}, fsError(root, err)
	}
	sort.Slice(hits, func(i, j int) bool {
		if !hits[i].mtime.Equal(hits[j].mtime) {
			return hits[i].mtime.After(hits[j].mtime)
		}
		return hits[i].rel < hits[j].rel
	})
	meta := SearchMeta{Pattern: args.Pattern, Path: root.Rel, Matches: len(hits)}
	if len(hits) == 0 {
		r := tools.TextResult(fmt.Sprintf("No files match %q in %s.", args.Pattern, root.Rel))
		r.Meta = mustJSON(meta)
		return r, nil
	}
	var sb strings.Builder
	for i, h := range hits {
		if i == globMaxResults {
			meta.Truncated = true
			fmt.Fprintf(&sb, "\n\n(Showing the %d newest of %d matching files; narrow the pattern or path to see the rest.)", globMaxResults, len(hits))
			break
		}
		if i > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(h.rel)
	}
	r := tools.TextResult(sb.String())
	r.Meta = mustJSON(meta)
	return r, nil
}
