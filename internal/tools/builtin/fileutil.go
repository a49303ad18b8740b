package builtin

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"

	"harness/internal/files"
	"harness/internal/tools"
)

// maxFileBytes bounds what the file tools load into memory.
const maxFileBytes = 64 << 20

// CodeFsNotRegular: the path is a named pipe, socket or device, which the
// file tools neither read nor write (opening one could block or have side
// effects).
const CodeFsNotRegular = "FS_NOT_REGULAR_FILE"

// openFlags are added to every open of a workspace file: a FIFO never
// blocks the open (its type is then checked on the opened file), and a
// terminal never becomes the server's controlling terminal.
const openFlags = syscall.O_NONBLOCK | syscall.O_NOCTTY

// fileSnapshot is a file's content as loaded by a file tool.
type fileSnapshot struct {
	content []byte
	info    fs.FileInfo
}

// loadFile reads a regular file of the workspace, with coded errors for the
// cases the model can act on. The I/O goes through the workspace as an
// os.Root (see openWorkspace).
func loadFile(p wsPath) (fileSnapshot, error) {
	root, err := openWorkspace(p)
	if err != nil {
		return fileSnapshot{}, err
	}
	defer root.Close()
	return loadFileIn(root, p)
}

// loadFileIn is loadFile on an opened workspace.
func loadFileIn(root *os.Root, p wsPath) (fileSnapshot, error) {
	f, info, err := openRegular(root, p, os.O_RDONLY, 0)
	if err != nil {
		return fileSnapshot{}, err
	}
	defer f.Close()
	if info.Size() > maxFileBytes {
		return fileSnapshot{}, tooLarge(p, info.Size())
	}
	content, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return fileSnapshot{}, fmt.Errorf("read %s: %w", p.Rel, err)
	}
	if len(content) > maxFileBytes {
		return fileSnapshot{}, tooLarge(p, int64(len(content)))
	}
	return fileSnapshot{content: content, info: info}, nil
}

func tooLarge(p wsPath, size int64) error {
	return fmt.Errorf("%q is too large (%d bytes, limit %d); use bash (head, tail, sed -n, grep) to inspect parts of it", p.Rel, size, maxFileBytes)
}

// openRegular opens p below root with flag (plus openFlags) and returns it
// only if the opened file is a regular file: the type is checked with
// fstat on what was opened, so what is checked is what is read or written.
// A cheap stat first keeps devices from being opened at all in the common
// case.
func openRegular(root *os.Root, p wsPath, flag int, perm fs.FileMode) (*os.File, fs.FileInfo, error) {
	if info, err := root.Stat(p.name()); err == nil {
		if err := checkRegular(p, info); err != nil {
			return nil, nil, err
		}
	} else if !errors.Is(err, fs.ErrNotExist) || flag&os.O_CREATE == 0 {
		return nil, nil, fsError(p, err)
	}
	f, err := root.OpenFile(p.name(), flag|openFlags, perm)
	if err != nil {
		return nil, nil, fsError(p, err)
	}
	info, err := f.Stat()
	if err == nil {
		err = checkRegular(p, info)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, info, nil
}

// checkRegular refuses directories and special files with coded errors.
func checkRegular(p wsPath, info fs.FileInfo) error {
	switch {
	case info.IsDir():
		return tools.Errorf(NameFs, CodeFsIsDirectory, "%q is a directory, not a file; use glob or bash (ls) to list it", p.Rel)
	case !info.Mode().IsRegular():
		return notRegular(p, fileKind(info.Mode()))
	}
	return nil
}

func notRegular(p wsPath, kind string) error {
	return tools.Errorf(NameFs, CodeFsNotRegular, "%q is %s, not a regular file; the file tools only read and write regular files", p.Rel, kind)
}

// fileKind names a non-regular file type.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "a special file"
}

// fsError turns an os.Root error on p into the error the model sees.
func fsError(p wsPath, err error) error {
	switch {
	case files.IsEscape(err):
		return tools.Errorf(NameWorkspace, CodePathOutsideWorkspace,
			"path %q leads outside the workspace (through a symlink or a directory that changed since it was checked); file tools only work inside the session workspace", p.Rel)
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return tools.Errorf(NameFs, CodeFsNotFound, "file %q does not exist", p.Rel)
	case errors.Is(err, syscall.EISDIR):
		return tools.Errorf(NameFs, CodeFsIsDirectory, "%q is a directory, not a file; use glob or bash (ls) to list it", p.Rel)
	case errors.Is(err, syscall.ENXIO):
		// Opening a FIFO without a reader for writing, or a socket.
		return notRegular(p, "a named pipe or socket")
	case errors.Is(err, syscall.ELOOP):
		return fmt.Errorf("%s: too many levels of symbolic links", p.Rel)
	}
	return fmt.Errorf("%s: %w", p.Rel, err)
}

// writeFile replaces p's content in place, through the workspace root.
// With create, p must not exist: it is created with perm, together with its
// missing parent directories, and given to the workspace's owner (see
// workspaceOwner). An existing file keeps its inode, owner and mode. It
// returns the file's state after the write.
func writeFile(p wsPath, content []byte, perm fs.FileMode, create bool) (fs.FileInfo, error) {
	root, err := openWorkspace(p)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	own := workspaceOwner(root)
	flag := os.O_WRONLY
	if create {
		if err := mkdirParents(root, p, own); err != nil {
			return nil, err
		}
		flag |= os.O_CREATE | os.O_EXCL
	}
	f, _, err := openRegular(root, p, flag, perm)
	if create && errors.Is(err, fs.ErrExist) {
		return nil, tools.Errorf(NameFs, CodeFsNotObserved, "%q was created by someone else a moment ago and has not been read in this session; read the file, then retry", p.Rel)
	}
	if err != nil {
		return nil, err
	}
	if create && own.set {
		if err := f.Chown(own.uid, own.gid); err != nil {
			f.Close()
			_ = root.Remove(p.name())
			return nil, fmt.Errorf("give %s to the workspace owner (uid %d): %w", p.Rel, own.uid, err)
		}
	}
	info, err := writeAll(f, content)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", p.Rel, err)
	}
	return info, nil
}

// writeAll truncates f, writes content and returns f's state after.
func writeAll(f *os.File, content []byte) (fs.FileInfo, error) {
	if err := f.Truncate(0); err != nil {
		return nil, err
	}
	if _, err := f.Write(content); err != nil {
		return nil, err
	}
	return f.Stat()
}

// mkdirParents creates p's missing parent directories one by one below
// root, giving each new one to own. Existing ones (also symlinks that stay
// inside the workspace) are used as they are.
func mkdirParents(root *os.Root, p wsPath, own owner) error {
	dir := path.Dir(p.Rel)
	if dir == "." || dir == "/" {
		return nil
	}
	parts := strings.Split(dir, "/")
	for i := range parts {
		name := strings.Join(parts[:i+1], "/")
		err := root.Mkdir(name, 0o755)
		switch {
		case err == nil:
			if own.set {
				if err := root.Lchown(name, own.uid, own.gid); err != nil {
					return fmt.Errorf("give %s to the workspace owner (uid %d): %w", name, own.uid, err)
				}
			}
		case errors.Is(err, fs.ErrExist):
		case files.IsEscape(err):
			return fsError(p, err)
		default:
			return fmt.Errorf("create parent directories of %s: %w", p.Rel, err)
		}
	}
	return nil
}

// owner is who new files and directories are given to; set is false when
// they keep the server's identity.
type owner struct {
	uid, gid int
	set      bool
}

// workspaceOwner returns the workspace directory's owner when the server
// runs as root and the workspace belongs to someone else (the unprivileged
// user sandboxed commands run as), so that user can change what the file
// tools create. Otherwise new files are the server's, as usual.
func workspaceOwner(root *os.Root) owner {
	if os.Geteuid() != 0 {
		return owner{}
	}
	info, err := root.Stat(".")
	if err != nil {
		return owner{}
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok || st.Uid == 0 {
		return owner{}
	}
	return owner{uid: int(st.Uid), gid: int(st.Gid), set: true}
}

// observe records what the agent now knows of the file: its content and
// the modification time of the state it was read or written in.
func observe(state *tools.AgentState, p wsPath, content []byte, info fs.FileInfo) {
	o := tools.FileObservation{Path: p.Abs, Size: int64(len(content)), Hash: sha256.Sum256(content)}
	if info != nil {
		o.ModTime = info.ModTime()
	}
	state.Observe(o)
}

// checkObserved enforces the read-before-change and stale-version guards on
// an existing file.
func checkObserved(state *tools.AgentState, p wsPath, current []byte) error {
	o, ok := state.Observation(p.Abs)
	if !ok {
		return tools.Errorf(NameFs, CodeFsNotObserved, "%q exists but has not been read in this session; read the file, then retry", p.Rel)
	}
	if o.Hash != sha256.Sum256(current) {
		return tools.Errorf(NameFs, CodeFsStaleVersion, "%q has changed since it was last read; re-read the file, then retry", p.Rel)
	}
	return nil
}
