// Package files browses and reads a directory tree (a session workspace)
// for people: list a directory, read a file, open one for download. All
// I/O goes through the directory opened as an os.Root, so symlinks and ".."
// never lead out of it, also when the tree changes while it is read;
// special files (FIFOs, sockets, devices) are never read and never block.
// Paths are slash-separated and relative to the directory.
package files

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
	"time"
)

// MaxEntries is how many entries List returns for one directory.
const MaxEntries = 1000

// binarySniff is how much of a file is checked for NUL bytes.
const binarySniff = 8000

// Errors, matched with errors.Is.
var (
	// ErrOutside: the path is absolute, climbs out with "..", or leads out
	// through a symlink.
	ErrOutside = errors.New("path is outside the directory")
	// ErrInvalid: the path is not usable (a NUL byte).
	ErrInvalid = errors.New("invalid path")
	// ErrNotFound: nothing is there (or the directory itself is gone).
	ErrNotFound = errors.New("no such file or directory")
	// ErrNotDir: List was given a file.
	ErrNotDir = errors.New("not a directory")
	// ErrIsDir: Read or Open was given a directory.
	ErrIsDir = errors.New("is a directory")
	// ErrNotRegular: a FIFO, socket or device.
	ErrNotRegular = errors.New("not a regular file")
)

// Kind is what an entry is.
type Kind string

// Entry kinds. Symlinks are reported as such and not followed.
const (
	KindDir     Kind = "dir"
	KindFile    Kind = "file"
	KindSymlink Kind = "symlink"
	KindOther   Kind = "other"
)

// Entry is one directory entry.
type Entry struct {
	Name    string    `json:"name"`
	Path    string    `json:"path"` // relative to the root, slash-separated
	Kind    Kind      `json:"kind"`
	Size    int64     `json:"size"`
	ModTime time.Time `json:"mtime"`
}

// Listing is one directory's entries: directories first, then by name.
type Listing struct {
	Path    string  `json:"path"`
	Entries []Entry `json:"entries"`
	// Truncated: the directory has more than MaxEntries entries; the
	// listing holds MaxEntries of them.
	Truncated bool `json:"truncated"`
}

// Clean validates a relative path and returns it cleaned ("." for the
// root; "" means the root too). Absolute paths and paths that climb out
// are ErrOutside.
func Clean(rel string) (string, error) {
	if strings.IndexByte(rel, 0) >= 0 {
		return "", fmt.Errorf("%w: %q", ErrInvalid, rel)
	}
	if rel == "" {
		return ".", nil
	}
	if path.IsAbs(rel) {
		return "", fmt.Errorf("%w: %q is absolute", ErrOutside, rel)
	}
	c := path.Clean(rel)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("%w: %q", ErrOutside, rel)
	}
	return c, nil
}

// open opens dir as a root and cleans rel.
func open(dir, rel string) (*os.Root, string, error) {
	c, err := Clean(rel)
	if err != nil {
		return nil, "", err
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, "", classify(c, err)
	}
	return r, c, nil
}

// List returns the entries of the directory rel below dir.
func List(dir, rel string) (Listing, error) {
	root, c, err := open(dir, rel)
	if err != nil {
		return Listing{}, err
	}
	defer root.Close()
	return list(root, c)
}

func list(root *os.Root, rel string) (Listing, error) {
	d, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return Listing{}, classify(rel, err)
	}
	defer d.Close()
	des, err := d.ReadDir(MaxEntries + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return Listing{}, classify(rel, err)
	}
	out := Listing{Path: rel, Entries: make([]Entry, 0, min(len(des), MaxEntries))}
	if len(des) > MaxEntries {
		des, out.Truncated = des[:MaxEntries], true
	}
	for _, de := range des {
		p := path.Join(rel, de.Name())
		e := Entry{Name: de.Name(), Path: p, Kind: kindOf(de.Type())}
		// Lstat through the root: the entry itself, never what it points to.
		if info, err := root.Lstat(p); err == nil {
			e.Kind, e.Size, e.ModTime = kindOf(info.Mode().Type()), info.Size(), info.ModTime()
		}
		out.Entries = append(out.Entries, e)
	}
	slices.SortFunc(out.Entries, func(a, b Entry) int {
		if (a.Kind == KindDir) != (b.Kind == KindDir) {
			if a.Kind == KindDir {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)), cmp.Compare(a.Name, b.Name))
	})
	return out, nil
}

func kindOf(t fs.FileMode) Kind {
	switch {
	case t.IsDir():
		return KindDir
	case t&fs.ModeSymlink != 0:
		return KindSymlink
	case t.IsRegular():
		return KindFile
	}
	return KindOther
}

// Read returns up to limit bytes of the regular file rel below dir (a
// symlink is followed only while it stays inside dir). truncated says the
// file is longer than limit; binary that its start holds a NUL byte (as
// git decides).
func Read(dir, rel string, limit int64) (content []byte, info fs.FileInfo, truncated, binary bool, err error) {
	f, info, err := Open(dir, rel)
	if err != nil {
		return nil, nil, false, false, err
	}
	defer f.Close()
	limit = max(limit, 0)
	content, err = io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, nil, false, false, fmt.Errorf("read %s: %w", rel, err)
	}
	if int64(len(content)) > limit {
		content, truncated = content[:limit], true
	}
	truncated = truncated || info.Size() > limit
	return content, info, truncated, IsBinary(content), nil
}

// Open opens the regular file rel below dir for reading (a download). The
// type is checked on the opened file, and opening never blocks.
func Open(dir, rel string) (*os.File, fs.FileInfo, error) {
	f, info, err := openFile(dir, rel)
	if errors.Is(err, ErrNotDir) {
		// A file in place of a parent directory: nothing is there.
		err = fmt.Errorf("%w: %s", ErrNotFound, rel)
	}
	return f, info, err
}

func openFile(dir, rel string) (*os.File, fs.FileInfo, error) {
	root, c, err := open(dir, rel)
	if err != nil {
		return nil, nil, err
	}
	defer root.Close()
	if c == "." {
		return nil, nil, fmt.Errorf("%w: %s", ErrIsDir, c)
	}
	// A stat first keeps devices from being opened at all; the fstat
	// after the open is the check that counts.
	if info, err := root.Stat(c); err != nil {
		return nil, nil, classify(c, err)
	} else if err := regular(c, info); err != nil {
		return nil, nil, err
	}
	f, err := root.OpenFile(c, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, classify(c, err)
	}
	info, err := f.Stat()
	if err == nil {
		err = regular(c, info)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, info, nil
}

func regular(rel string, info fs.FileInfo) error {
	switch {
	case info.IsDir():
		return fmt.Errorf("%w: %s", ErrIsDir, rel)
	case !info.Mode().IsRegular():
		return fmt.Errorf("%w: %s", ErrNotRegular, rel)
	}
	return nil
}

// classify maps an os error on rel to the package's errors.
func classify(rel string, err error) error {
	switch {
	case IsEscape(err):
		return fmt.Errorf("%w: %s leads out through a symlink", ErrOutside, rel)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %s", ErrNotFound, rel)
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("%w: %s", ErrNotDir, rel)
	case errors.Is(err, syscall.EISDIR):
		return fmt.Errorf("%w: %s", ErrIsDir, rel)
	case errors.Is(err, syscall.ENXIO):
		return fmt.Errorf("%w: %s", ErrNotRegular, rel)
	}
	return err
}

// IsBinary reports whether content looks binary: a NUL byte near its start,
// as git decides.
func IsBinary(content []byte) bool {
	return bytes.IndexByte(content[:min(len(content), binarySniff)], 0) >= 0
}

// IsEscape reports an os.Root refusal of a name that leads out of the
// root (a symlink or ".."). The os package has no exported sentinel for
// it, so the error text is matched.
func IsEscape(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && pe.Err != nil && pe.Err.Error() == "path escapes from parent"
}
