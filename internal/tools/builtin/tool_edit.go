package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"harness/internal/tools"
)

type editArgs struct {
	FilePath   string `json:"file_path"`
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all"`
}

func editTool() tools.Definition {
	return tools.Definition{
		Name: ToolEdit,
		Description: `Replace text in an existing workspace file: old_string is replaced by new_string, as literal text (no regular expressions).

old_string must match the file exactly, including whitespace and indentation (copy it from read output without the line-number prefix), and must occur exactly once unless replace_all is true; include enough surrounding lines to make it unique. You must have read the file in this session, and it must not have changed since. Use write to create new files.`,
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "file_path": {"type": "string", "minLength": 1, "description": "Path of the file, relative to the workspace or absolute inside it."},
    "old_string": {"type": "string", "minLength": 1, "description": "The exact text to replace."},
    "new_string": {"type": "string", "description": "The replacement text (must differ from old_string)."},
    "replace_all": {"type": "boolean", "description": "Replace every occurrence instead of requiring exactly one (default false)."}
  },
  "required": ["file_path", "old_string", "new_string"],
  "additionalProperties": false
}`),
		Access:  tools.AccessWrite,
		Execute: executeEdit,
		Preview: previewEdit,
	}
}

func executeEdit(ctx context.Context, call *tools.Call) (tools.Result, error) {
	args, err := decodeArgs[editArgs](call)
	if err != nil {
		return tools.Result{}, err
	}
	if args.OldString == args.NewString {
		return tools.Result{}, tools.Errorf(tools.NameToolArgs, tools.CodeInvalidArgs, "old_string and new_string are identical; nothing to change")
	}
	p, err := resolvePath(call.Env.Workspace(), args.FilePath)
	if err != nil {
		return tools.Result{}, err
	}
	snap, err := loadFile(p)
	if err != nil {
		return tools.Result{}, err
	}
	if err := checkObserved(call.State(), p, snap.content); err != nil {
		return tools.Result{}, err
	}
	old := string(snap.content)
	n := strings.Count(old, args.OldString)
	switch {
	case n == 0:
		return tools.Result{}, tools.Errorf(NameFs, CodeEditNoMatch, "old_string was not found in %q; it must match the file exactly, including whitespace and indentation (re-read the file if unsure)", p.Rel)
	case n > 1 && !args.ReplaceAll:
		return tools.Result{}, tools.Errorf(NameFs, CodeEditAmbiguous, "old_string occurs %d times in %q; include more surrounding context to make it unique, or set replace_all to true", n, p.Rel)
	}
	count := 1
	if args.ReplaceAll {
		count = -1
	}
	updated := strings.Replace(old, args.OldString, args.NewString, count)
	info, err := writeFile(p, []byte(updated), snap.info.Mode().Perm(), false)
	if err != nil {
		return tools.Result{}, err
	}
	observe(call.State(), p, []byte(updated), info)

	meta := changeMeta(p, false, snap.content, []byte(updated))
	replaced := 1
	if args.ReplaceAll {
		replaced = n
	}
	r := tools.TextResult(fmt.Sprintf("Edited %s: replaced %d occurrence(s) (+%d -%d lines).", p.Rel, replaced, meta.Added, meta.Removed))
	r.Meta = mustJSON(meta)
	return r, nil
}
