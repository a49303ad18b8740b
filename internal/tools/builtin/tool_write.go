package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"harness/internal/files"
	"harness/internal/tools"
	"harness/internal/tools/builtin/textdiff"
)

type writeArgs struct {
	FilePath string `json:"file_path"`
	Content  string `json:"content"`
}

// FileChangeMeta is the presentation data of write and edit results.
type FileChangeMeta struct {
	Path      string `json:"path"`
	Created   bool   `json:"created"`
	Diff      string `json:"diff"`
	Added     int    `json:"added"`
	Removed   int    `json:"removed"`
	Truncated bool   `json:"truncated,omitempty"`
}

func writeTool() tools.Definition {
	return tools.Definition{
		Name: ToolWrite,
		Description: `Create a file, or replace a file's entire content, in the workspace. Parent directories are created as needed.

To overwrite an existing file you must have read it first in this session, and it must not have changed since (otherwise read it again, then retry). Creating a new file needs no read. Prefer edit for changing part of a file. Paths are relative to the workspace (or absolute inside it).`,
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "file_path": {"type": "string", "minLength": 1, "description": "Path of the file, relative to the workspace or absolute inside it."},
    "content": {"type": "string", "description": "The complete new content of the file."}
  },
  "required": ["file_path", "content"],
  "additionalProperties": false
}`),
		Access:  tools.AccessWrite,
		Execute: executeWrite,
		Preview: previewWrite,
	}
}

func executeWrite(ctx context.Context, call *tools.Call) (tools.Result, error) {
	args, err := decodeArgs[writeArgs](call)
	if err != nil {
		return tools.Result{}, err
	}
	p, err := resolvePath(call.Env.Workspace(), args.FilePath)
	if err != nil {
		return tools.Result{}, err
	}
	var old []byte
	perm := fs.FileMode(0o644)
	created := false
	snap, err := loadFile(p)
	var ce *tools.CodedError
	switch {
	case err == nil:
		if err := checkObserved(call.State(), p, snap.content); err != nil {
			return tools.Result{}, err
		}
		old, perm = snap.content, snap.info.Mode().Perm()
	case errors.As(err, &ce) && ce.Code == CodeFsNotFound:
		created = true
	default:
		return tools.Result{}, err
	}
	info, err := writeFile(p, []byte(args.Content), perm, created)
	if err != nil {
		return tools.Result{}, err
	}
	observe(call.State(), p, []byte(args.Content), info)

	meta := changeMeta(p, created, old, []byte(args.Content))
	lines := strings.Count(args.Content, "\n")
	if args.Content != "" && !strings.HasSuffix(args.Content, "\n") {
		lines++
	}
	var text string
	switch {
	case created:
		text = fmt.Sprintf("Created %s (%d lines).", p.Rel, lines)
	case string(old) == args.Content:
		text = fmt.Sprintf("%s already had this content; nothing changed.", p.Rel)
	default:
		text = fmt.Sprintf("Updated %s (%d lines; +%d -%d).", p.Rel, lines, meta.Added, meta.Removed)
	}
	r := tools.TextResult(text)
	r.Meta = mustJSON(meta)
	return r, nil
}

// changeMeta diffs old → new for the UI; binary content is not diffed.
func changeMeta(p wsPath, created bool, old, new []byte) FileChangeMeta {
	m := FileChangeMeta{Path: p.Rel, Created: created}
	if files.IsBinary(old) || files.IsBinary(new) {
		m.Diff = "Binary files differ\n"
		return m
	}
	oldName := "a/" + p.Rel
	if created {
		oldName = "/dev/null"
	}
	d := textdiff.Compute(oldName, "b/"+p.Rel, string(old), string(new))
	m.Diff, m.Added, m.Removed, m.Truncated = d.Unified, d.Added, d.Removed, d.Truncated
	return m
}
