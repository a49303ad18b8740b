package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"harness/internal/crashpoint"
)

// CopyReport says what a fork copied of its parent's workspace.
type CopyReport struct {
	Copied  bool  `json:"copied"`
	Files   int   `json:"files"`
	Dirs    int   `json:"dirs"`
	Links   int   `json:"links"`
	Bytes   int64 `json:"bytes"`
	Skipped int   `json:"skipped"` // sockets, FIFOs, devices
	// Reason says why nothing was copied.
	Reason string `json:"reason,omitempty"`
}

// CopyTree copies the workspace src into the empty directory dst, up to the
// fork cap: all of it, or nothing when it is larger (a partial copy would
// look whole). Symbolic links are copied as links, never followed; special
// files are skipped. Both trees are reached through os.Root, so a link or a
// rename inside src cannot make the copy read or write outside them. What is
// created belongs to dst's owner.
func (m *Manager) CopyTree(ctx context.Context, src, dst string) (CopyReport, error) {
	if m.d.ForkCopyMax <= 0 {
		return CopyReport{Reason: "fork copies are turned off on this server (HARNESS_FORK_COPY_MAX=0)"}, nil
	}
	sr, err := os.OpenRoot(src)
	if errors.Is(err, fs.ErrNotExist) {
		return CopyReport{Reason: "the parent's workspace no longer exists"}, nil
	}
	if err != nil {
		return CopyReport{}, fmt.Errorf("open the parent's workspace: %w", err)
	}
	defer sr.Close()
	size, err := treeSize(ctx, sr, m.d.ForkCopyMax)
	if err != nil {
		return CopyReport{}, err
	}
	if size > m.d.ForkCopyMax {
		return CopyReport{Bytes: size, Reason: fmt.Sprintf("the parent's workspace holds more than the fork cap of %s", humanBytes(m.d.ForkCopyMax))}, nil
	}
	dr, err := os.OpenRoot(dst)
	if err != nil {
		return CopyReport{}, fmt.Errorf("open the fork's workspace: %w", err)
	}
	defer dr.Close()
	uid, gid := -1, -1
	if os.Geteuid() == 0 {
		if fi, err := dr.Stat("."); err == nil {
			st := fi.Sys().(*syscall.Stat_t)
			uid, gid = int(st.Uid), int(st.Gid)
		}
	}
	c := copier{src: sr, dst: dr, uid: uid, gid: gid, budget: m.d.ForkCopyMax}
	if err := c.dir(ctx, "."); err != nil {
		return CopyReport{}, err
	}
	c.rep.Copied = true
	return c.rep, nil
}

// treeSize adds up regular file sizes, stopping once over limit.
func treeSize(ctx context.Context, r *os.Root, limit int64) (int64, error) {
	var total int64
	errStop := errors.New("over")
	err := fs.WalkDir(r.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable entries are not copied either
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				total += fi.Size()
			}
			if total > limit {
				return errStop
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return 0, fmt.Errorf("measure the parent's workspace: %w", err)
	}
	return total, nil
}

type copier struct {
	src, dst *os.Root
	uid, gid int
	budget   int64
	rep      CopyReport
}

func (c *copier) own(name string) error {
	if c.uid < 0 {
		return nil
	}
	return c.dst.Lchown(name, c.uid, c.gid)
}

func (c *copier) dir(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f, err := c.src.Open(name)
	if err != nil {
		return fmt.Errorf("copy %s: %w", name, err)
	}
	ents, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return fmt.Errorf("copy %s: %w", name, err)
	}
	for _, e := range ents {
		p := filepath.Join(name, e.Name())
		fi, err := c.src.Lstat(p)
		if err != nil {
			continue // gone meanwhile
		}
		switch {
		case fi.Mode().IsDir():
			if err := c.dst.Mkdir(p, fi.Mode().Perm()|0o700); err != nil {
				return fmt.Errorf("copy %s: %w", p, err)
			}
			if err := c.own(p); err != nil {
				return err
			}
			c.rep.Dirs++
			if err := c.dir(ctx, p); err != nil {
				return err
			}
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := c.src.Readlink(p)
			if err != nil {
				continue
			}
			if err := c.dst.Symlink(target, p); err != nil {
				return fmt.Errorf("copy %s: %w", p, err)
			}
			if err := c.own(p); err != nil {
				return err
			}
			c.rep.Links++
		case fi.Mode().IsRegular():
			if err := c.file(p, fi.Mode().Perm()); err != nil {
				return err
			}
		default:
			c.rep.Skipped++
		}
	}
	return nil
}

// file copies one regular file, refusing one that became something else
// since it was listed (the open does not block on a FIFO).
func (c *copier) file(p string, perm fs.FileMode) error {
	in, err := c.src.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		c.rep.Skipped++
		return nil
	}
	defer in.Close()
	if fi, err := in.Stat(); err != nil || !fi.Mode().IsRegular() {
		c.rep.Skipped++
		return nil
	}
	out, err := c.dst.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("copy %s: %w", p, err)
	}
	// The file may have grown since it was measured: the cap still holds.
	n, err := io.Copy(out, io.LimitReader(in, c.budget-c.rep.Bytes+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("copy %s: %w", p, err)
	}
	c.rep.Bytes += n
	if c.rep.Bytes > c.budget {
		return fmt.Errorf("copy %s: the workspace grew past the fork cap while it was copied", p)
	}
	c.rep.Files++
	crashpoint.Hit(crashpoint.ForkCopyFile)
	return c.own(p)
}

// humanBytes formats a size for messages.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for v := n / unit; v >= unit; v /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
