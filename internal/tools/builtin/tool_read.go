package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"harness/internal/files"
	"harness/internal/tools"
)

const (
	readDefaultLimit = 2000
	readMaxLineRunes = 2000
	// readMaxOutput bounds one read's text; the footer says where to go on.
	readMaxOutput = 256 * 1024
)

type readArgs struct {
	FilePath string `json:"file_path"`
	Offset   int    `json:"offset"`
	Limit    int    `json:"limit"`
}

// ReadMeta is the presentation data of a read result.
type ReadMeta struct {
	Path       string `json:"path"`
	StartLine  int    `json:"startLine"`
	EndLine    int    `json:"endLine"`
	TotalLines int    `json:"totalLines"`
	Truncated  bool   `json:"truncated"`
}

func readTool() tools.Definition {
	return tools.Definition{
		Name: ToolRead,
		Description: `Read a text file from the workspace. Returns line-numbered content ("<line number><TAB><text>"), by default the first 2000 lines; use offset (1-based first line) and limit to read other parts of long files. Lines longer than 2000 characters are cut. Binary files are refused.

Reading a file records its current version: edit needs a prior read, and write or edit refuse to change a file that changed since it was last read. Paths are relative to the workspace (or absolute inside it).`,
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "file_path": {"type": "string", "minLength": 1, "description": "Path of the file, relative to the workspace or absolute inside it."},
    "offset": {"type": "integer", "minimum": 1, "description": "1-based line number to start reading at (default 1)."},
    "limit": {"type": "integer", "minimum": 1, "description": "Maximum number of lines to read (default 2000)."}
  },
  "required": ["file_path"],
  "additionalProperties": false
}`),
		Access:          tools.AccessRead,
		ConcurrencySafe: alwaysSafe,
		Execute:         executeRead,
	}
}

func executeRead(ctx context.Context, call *tools.Call) (tools.Result, error) {
	args, err := decodeArgs[readArgs](call)
	if err != nil {
		return tools.Result{}, err
	}
	p, err := resolvePath(call.Env.Workspace(), args.FilePath)
	if err != nil {
		return tools.Result{}, err
	}
	snap, err := loadFile(p)
	if err != nil {
		return tools.Result{}, err
	}
	if files.IsBinary(snap.content) {
		return tools.Result{}, tools.Errorf(NameFs, CodeFsBinary, "%q is a binary file (%d bytes) and cannot be read as text; use bash (file, xxd | head) to inspect it", p.Rel, len(snap.content))
	}
	observe(call.State(), p, snap.content, snap.info)

	offset, limit := max(args.Offset, 1), args.Limit
	if limit <= 0 {
		limit = readDefaultLimit
	}
	lines := strings.SplitAfter(string(snap.content), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	total := len(lines)
	if total == 0 {
		r := tools.TextResult(fmt.Sprintf("(%s is empty)", p.Rel))
		r.Meta = mustJSON(ReadMeta{Path: p.Rel})
		return r, nil
	}
	if offset > total {
		return tools.Result{}, fmt.Errorf("offset %d is past the end of %q, which has %d lines", offset, p.Rel, total)
	}
	var sb strings.Builder
	end := offset - 1
	for end < total && end < offset-1+limit {
		line := strings.TrimRight(lines[end], "\r\n")
		if utf8.RuneCountInString(line) > readMaxLineRunes {
			line = tools.CutRunes(line, runeOffset(line, readMaxLineRunes)) + " [... line truncated ...]"
		}
		entry := fmt.Sprintf("%6d\t%s\n", end+1, line)
		if sb.Len()+len(entry) > readMaxOutput && end >= offset {
			break
		}
		sb.WriteString(entry)
		end++
	}
	meta := ReadMeta{Path: p.Rel, StartLine: offset, EndLine: end, TotalLines: total}
	if end < total {
		meta.Truncated = true
		fmt.Fprintf(&sb, "\n(Showing lines %d-%d of %d. Use offset=%d to read more.)", offset, end, total, end+1)
	}
	r := tools.TextResult(strings.TrimSuffix(sb.String(), "\n"))
	r.Meta = mustJSON(meta)
	return r, nil
}

// runeOffset returns the byte offset of the n-th rune of s.
func runeOffset(s string, n int) int {
	i := 0
	for pos := range s {
		if i == n {
			return pos
		}
		i++
	}
	return len(s)
}
