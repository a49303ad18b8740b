package tools

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
)

// walkCheckEvery is how many entries a walk visits between cancellation
// checks.
const walkCheckEvery = 256

// walkFiles calls fn for every regular file under root (a directory or a
// single file of the workspace), in lexical order. It skips .git, does not
// descend into symlinked directories and skips symlinked files that resolve
// outside the workspace, so nothing outside it is ever read. rel is relative
// to the workspace (slash-separated); abs is the path to open.
func walkFiles(ctx context.Context, wsReal string, root wsPath, fn func(rel, abs string, info fs.FileInfo) error) error {
	info, err := os.Stat(root.Abs)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		if info.Mode().IsRegular() {
			return fn(root.Rel, root.Abs, info)
		}
		return nil
	}
	n := 0
	return filepath.WalkDir(root.Abs, func(path string, d fs.DirEntry, err error) error {
		if n++; n%walkCheckEvery == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			if path == root.Abs {
				return err
			}
			return nil // unreadable entries are skipped, not fatal
		}
		if d.IsDir() {
			if d.Name() == ".git" && path != root.Abs {
				return filepath.SkipDir
			}
			return nil
		}
		abs := path
		if d.Type()&fs.ModeSymlink != 0 {
			target, err := filepath.EvalSymlinks(path)
			if err != nil || !within(wsReal, target) {
				return nil
			}
			abs = target
		}
		fi, err := os.Stat(abs)
		if err != nil || !fi.Mode().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(wsReal, path)
		if err != nil {
			return nil
		}
		return fn(filepath.ToSlash(rel), abs, fi)
	})
}
