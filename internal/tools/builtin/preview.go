package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"harness/internal/files"
	"harness/internal/session"
	"harness/internal/tools"
	"harness/internal/tools/builtin/textdiff"
)

// Approval previews: what a call would do, computed before the approver is
// asked and logged with approval/asked. They read, never write; whatever
// they cannot compute (a bad path, an unreadable file, an edit whose
// old_string does not match) gives no preview, and the body reports the
// problem as it would without one. The read-before-write guard is left to
// the body too: a preview shows the change the call asks for.

// maxPreviewDiff bounds the diff an approval carries (it is logged and sent
// to every viewer); a longer diff is cut at a line with textdiff's marker.
const maxPreviewDiff = 64 << 10

// previewFileArgs are the arguments the file previews read (a subset of
// write's and edit's).
type previewFileArgs struct {
	FilePath   string  `json:"file_path"`
	Content    *string `json:"content"`
	OldString  string  `json:"old_string"`
	NewString  string  `json:"new_string"`
	ReplaceAll bool    `json:"replace_all"`
}

// previewWrite is the diff of a write against the current file, or the
// whole content against /dev/null when it creates the file.
func previewWrite(_ context.Context, call *tools.Call) *session.ApprovalPreview {
	var args previewFileArgs
	if json.Unmarshal(call.Args, &args) != nil || args.Content == nil {
		return nil
	}
	p, err := resolvePath(call.Env.Workspace(), args.FilePath)
	if err != nil {
		return nil
	}
	snap, err := loadFile(p)
	var ce *tools.CodedError
	switch {
	case err == nil:
		return diffPreview(p.Rel, false, snap.content, []byte(*args.Content))
	case errors.As(err, &ce) && ce.Code == CodeFsNotFound:
		return diffPreview(p.Rel, true, nil, []byte(*args.Content))
	}
	return nil
}

// previewEdit is the diff of applying the replacement in memory; none when
// old_string does not match (or matches ambiguously): the body fails then.
func previewEdit(_ context.Context, call *tools.Call) *session.ApprovalPreview {
	var args previewFileArgs
	if json.Unmarshal(call.Args, &args) != nil || args.OldString == "" || args.OldString == args.NewString {
		return nil
	}
	p, err := resolvePath(call.Env.Workspace(), args.FilePath)
	if err != nil {
		return nil
	}
	snap, err := loadFile(p)
	if err != nil {
		return nil
	}
	old := string(snap.content)
	n := strings.Count(old, args.OldString)
	if n == 0 || (n > 1 && !args.ReplaceAll) {
		return nil
	}
	count := 1
	if args.ReplaceAll {
		count = -1
	}
	return diffPreview(p.Rel, false, snap.content, []byte(strings.Replace(old, args.OldString, args.NewString, count)))
}

// previewBash is the command line and its description.
func previewBash(_ context.Context, call *tools.Call) *session.ApprovalPreview {
	var args struct {
		Command     string `json:"command"`
		Description string `json:"description"`
	}
	if json.Unmarshal(call.Args, &args) != nil || args.Command == "" {
		return nil
	}
	return &session.ApprovalPreview{Kind: session.PreviewCommand, Command: args.Command, Description: args.Description}
}

// diffPreview diffs old → new like the result's FileChangeMeta (binary
// content is not diffed), bounded to maxPreviewDiff.
func diffPreview(rel string, created bool, old, new []byte) *session.ApprovalPreview {
	pv := &session.ApprovalPreview{Kind: session.PreviewDiff, Path: rel, Created: created}
	if files.IsBinary(old) || files.IsBinary(new) {
		pv.Diff = "Binary files differ\n"
		return pv
	}
	oldName := "a/" + rel
	if created {
		oldName = "/dev/null"
	}
	d := textdiff.Compute(oldName, "b/"+rel, string(old), string(new))
	pv.Diff, pv.Added, pv.Removed, pv.Truncated = d.Unified, d.Added, d.Removed, d.Truncated
	if len(pv.Diff) > maxPreviewDiff {
		body := strings.TrimSuffix(pv.Diff, textdiff.TruncatedMarker+"\n")
		cut := strings.LastIndexByte(body[:maxPreviewDiff], '\n') + 1
		pv.Diff = body[:cut] + textdiff.TruncatedMarker + "\n"
		pv.Truncated = true
	}
	return pv
}
