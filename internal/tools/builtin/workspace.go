package builtin

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"harness/internal/tools"
)

// maxLinkDepth bounds symlink resolution (as the kernel's ELOOP does).
const maxLinkDepth = 40

// wsPath is a path confined to the session workspace. resolvePath checks
// it; the I/O on it then goes through the workspace opened as an os.Root
// (openWorkspace) with Rel, so a tree that changes after the check (a
// directory swapped for a symlink) still cannot lead the I/O out.
type wsPath struct {
	Abs string // absolute, symlinks resolved
	Rel string // slash-separated, relative to the workspace; "." for its root
	// Root is the workspace directory (symlinks resolved) Rel is relative
	// to. Empty in a hand-built wsPath: it is then derived from Abs and Rel.
	Root string
}

// root returns the workspace directory p is relative to.
func (p wsPath) root() string {
	if p.Root != "" {
		return p.Root
	}
	if p.Rel == "." || p.Rel == "" {
		return p.Abs
	}
	return strings.TrimSuffix(p.Abs, string(filepath.Separator)+filepath.FromSlash(p.Rel))
}

// name is p as a name below the workspace root, for os.Root.
func (p wsPath) name() string {
	if p.Rel == "" {
		return "."
	}
	return filepath.FromSlash(p.Rel)
}

// openWorkspace opens the workspace p belongs to as an os.Root. Every name
// below it is resolved by the kernel relative to the opened directory, and
// symlinks or ".." that lead out of it are refused, also when the tree
// changes between resolvePath's check and the I/O.
func openWorkspace(p wsPath) (*os.Root, error) {
	r, err := os.OpenRoot(p.root())
	if err != nil {
		return nil, fmt.Errorf("workspace %s is unavailable: %w", p.root(), err)
	}
	return r, nil
}

// workspaceRoot returns the cleaned and the symlink-resolved workspace.
func workspaceRoot(workspace string) (clean, real string, err error) {
	if workspace == "" || !filepath.IsAbs(workspace) {
		return "", "", tools.Errorf(NameWorkspace, CodePathOutsideWorkspace, "the session has no absolute workspace directory (got %q)", workspace)
	}
	clean = filepath.Clean(workspace)
	real, err = filepath.EvalSymlinks(clean)
	if err != nil {
		return "", "", fmt.Errorf("workspace %s is unavailable: %w", clean, err)
	}
	return clean, real, nil
}

// resolvePath confines p to the workspace: relative paths are resolved
// against it, and `..` escapes, absolute paths outside it and symlinks
// (anywhere along the longest existing prefix) that lead outside it are
// refused with PATH_OUTSIDE_WORKSPACE.
func resolvePath(workspace, p string) (wsPath, error) {
	clean, real, err := workspaceRoot(workspace)
	if err != nil {
		return wsPath{}, err
	}
	if strings.TrimSpace(p) == "" {
		return wsPath{}, tools.Errorf(tools.NameToolArgs, tools.CodeInvalidArgs, "empty path")
	}
	lex := filepath.Clean(p)
	if !filepath.IsAbs(lex) {
		lex = filepath.Join(clean, lex)
	}
	if !within(clean, lex) && !within(real, lex) {
		return wsPath{}, tools.Errorf(NameWorkspace, CodePathOutsideWorkspace,
			"path %q is outside the workspace %s; file tools only work inside the session workspace", p, clean)
	}
	resolved, err := resolveExisting(lex, 0)
	if err != nil {
		return wsPath{}, fmt.Errorf("resolve %q: %w", p, err)
	}
	if !within(real, resolved) {
		return wsPath{}, tools.Errorf(NameWorkspace, CodePathOutsideWorkspace,
			"path %q resolves through a symlink to %s, outside the workspace %s; file tools only work inside the session workspace", p, resolved, clean)
	}
	rel, err := filepath.Rel(real, resolved)
	if err != nil {
		return wsPath{}, fmt.Errorf("resolve %q: %w", p, err)
	}
	return wsPath{Abs: resolved, Rel: filepath.ToSlash(rel), Root: real}, nil
}

// within reports whether p is root or below it (both clean and absolute).
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return false
	}
	return rel == "." || (rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel))
}

// resolveExisting evaluates symlinks along the longest existing prefix of
// the absolute path p and appends the rest. Dangling symlinks are followed
// by hand, so a link to a not yet existing file outside the workspace is
// still seen as outside.
func resolveExisting(p string, depth int) (string, error) {
	if depth > maxLinkDepth {
		return "", fmt.Errorf("too many levels of symbolic links")
	}
	cur := p
	var rest []string
	for {
		_, err := os.Lstat(cur)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return "", err
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			break
		}
		rest = append(rest, filepath.Base(cur))
		cur = parent
	}
	slicesReverse(rest)
	real, err := filepath.EvalSymlinks(cur)
	if err == nil {
		return filepath.Join(append([]string{real}, rest...)...), nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	// cur exists but does not resolve: it is a dangling symlink. Follow it.
	target, lerr := os.Readlink(cur)
	if lerr != nil {
		return "", err
	}
	if !filepath.IsAbs(target) {
		parent, perr := resolveExisting(filepath.Dir(cur), depth+1)
		if perr != nil {
			return "", perr
		}
		target = filepath.Join(parent, target)
	}
	return resolveExisting(filepath.Join(append([]string{target}, rest...)...), depth+1)
}

func slicesReverse(s []string) {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
}
