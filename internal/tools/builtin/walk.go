package builtin

import (
	"context"
	"io"
	"io/fs"
	"os"
)

// walkCheckEvery is how many entries a walk visits between cancellation
// checks.
const walkCheckEvery = 256

// walkFiles calls fn for every regular file under start (a directory or a
// single file of the workspace), in lexical order. Everything goes through
// ws, the workspace opened as an os.Root: directories are read with
// ws.FS(), which never descends into symlinked directories, and a
// symlinked file is stat'ed through ws, which follows it only while it
// stays inside the workspace, so nothing outside is ever listed or read,
// also when the tree changes during the walk. It skips .git and special
// files (FIFOs, sockets, devices). rel is relative to the workspace
// (slash-separated).
func walkFiles(ctx context.Context, ws *os.Root, start wsPath, fn func(rel string, info fs.FileInfo) error) error {
	info, err := ws.Stat(start.name())
	if err != nil {
		return err
	}
	if !info.IsDir() {
		if info.Mode().IsRegular() {
			return fn(start.Rel, info)
		}
		return nil
	}
	n := 0
	return fs.WalkDir(ws.FS(), start.Rel, func(rel string, d fs.DirEntry, err error) error {
		if n++; n%walkCheckEvery == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			if rel == start.Rel {
				return err
			}
			return nil // unreadable entries are skipped, not fatal
		}
		if d.IsDir() {
			if d.Name() == ".git" && rel != start.Rel {
				return fs.SkipDir
			}
			return nil
		}
		var fi fs.FileInfo
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			fi, err = ws.Stat(rel) // refused if it leads out
		case d.Type().IsRegular():
			fi, err = ws.Lstat(rel)
		default:
			return nil
		}
		if err != nil || !fi.Mode().IsRegular() {
			return nil
		}
		return fn(rel, fi)
	})
}

// readRegular reads a regular workspace file of at most limit bytes
// through ws, without blocking on special files.
func readRegular(ws *os.Root, rel string, limit int64) ([]byte, error) {
	p := wsPath{Rel: rel}
	f, info, err := openRegular(ws, p, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if info.Size() > limit {
		return nil, tooLarge(p, info.Size())
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, tooLarge(p, int64(len(b)))
	}
	return b, nil
}
