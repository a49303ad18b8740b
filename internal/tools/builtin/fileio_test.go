package builtin

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"harness/internal/files"
	"harness/internal/tools"
)

// codeOf is the coded error's code ("" for other errors).
func codeOf(err error) string {
	var ce *tools.CodedError
	if errors.As(err, &ce) {
		return ce.Code
	}
	return ""
}

func mustNotExist(t *testing.T, p string) {
	t.Helper()
	if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s exists (err %v): something was created outside the workspace", p, err)
	}
}

// Symlinks to outside the workspace — the file itself, or a parent
// directory — are refused by read, write and edit, and nothing outside is
// read or changed.
func TestFileToolsRefuseSymlinksOut(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("TOP SECRET\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, Options{})
	for name, target := range map[string]string{"file": secret, "dir": outside, "parent/dir": outside} {
		link := filepath.Join(h.ws, name)
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"file", "dir/secret.txt", "parent/dir/secret.txt"} {
		mustCode(t, h.run(ToolRead, map[string]any{"file_path": p}), CodePathOutsideWorkspace)
		mustCode(t, h.run(ToolWrite, map[string]any{"file_path": p, "content": "pwned"}), CodePathOutsideWorkspace)
		mustCode(t, h.run(ToolEdit, map[string]any{"file_path": p, "old_string": "TOP", "new_string": "PWNED"}), CodePathOutsideWorkspace)
	}
	for _, p := range []string{"dir/new.txt", "dir/deeper/new.txt", "parent/dir/new.txt"} {
		mustCode(t, h.run(ToolWrite, map[string]any{"file_path": p, "content": "pwned"}), CodePathOutsideWorkspace)
	}
	if b, _ := os.ReadFile(secret); string(b) != "TOP SECRET\n" {
		t.Fatal("the outside file was modified")
	}
	mustNotExist(t, filepath.Join(outside, "new.txt"))
	mustNotExist(t, filepath.Join(outside, "deeper"))
	// Searches under a path that does not exist say so.
	if text := mustCode(t, h.run(ToolGlob, map[string]any{"pattern": "*", "path": "missing"}), CodeFsNotFound); !strings.Contains(text, `path "missing" does not exist`) {
		t.Errorf("glob missing: %q", text)
	}
}

// The I/O layer is safe on its own: a path checked by resolvePath whose
// directory is then swapped for a symlink pointing out (what a process in
// the workspace could do between the check and the use) cannot make a
// read or write leave the workspace.
func TestIOAfterSwapStaysInside(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	secret := filepath.Join(outside, "x.txt")
	if err := os.WriteFile(secret, []byte("TOP SECRET\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	for _, d := range []string{"sub", "new", "file"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(ws, "sub", "x.txt"), []byte("inside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "f.txt"), []byte("inside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	existing, err := resolvePath(ws, "sub/x.txt")
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := resolvePath(ws, "new/deeper/y.txt") // "new" exists, "deeper" not yet
	if err != nil {
		t.Fatal(err)
	}
	file, err := resolvePath(ws, "f.txt")
	if err != nil {
		t.Fatal(err)
	}
	// The swaps.
	swap := func(name, target string) {
		p := filepath.Join(ws, name)
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	swap("sub", outside)
	swap("new", outside)
	swap("f.txt", secret)

	for _, p := range []wsPath{existing, file} {
		snap, err := loadFile(p)
		if codeOf(err) != CodePathOutsideWorkspace || snap.content != nil {
			t.Errorf("load %s after the swap: %q, %v", p.Rel, snap.content, err)
		}
		if _, err := writeFile(p, []byte("pwned"), 0o644, false); codeOf(err) != CodePathOutsideWorkspace {
			t.Errorf("write %s after the swap: %v", p.Rel, err)
		}
	}
	if _, err := writeFile(fresh, []byte("pwned"), 0o644, true); codeOf(err) != CodePathOutsideWorkspace {
		t.Errorf("create %s after the swap: %v", fresh.Rel, err)
	} else if !strings.Contains(err.Error(), "outside the workspace") {
		t.Errorf("unclear message %q", err)
	}
	// A hand-built path (no Root) derives the workspace from Abs and Rel.
	hand := wsPath{Abs: filepath.Join(ws, "sub", "x.txt"), Rel: "sub/x.txt"}
	if _, err := loadFile(hand); codeOf(err) != CodePathOutsideWorkspace {
		t.Errorf("hand-built path: %v", err)
	}
	if b, _ := os.ReadFile(secret); string(b) != "TOP SECRET\n" {
		t.Fatalf("the outside file was modified: %q", b)
	}
	mustNotExist(t, filepath.Join(outside, "deeper"))

	// A swap during a walk: glob and grep on the swapped directory list
	// nothing from outside.
	ctx := context.Background()
	root, err := os.OpenRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	var seen []string
	err = walkFiles(ctx, root, wsPath{Rel: "."}, func(rel string, _ fs.FileInfo) error {
		seen = append(seen, rel)
		return nil
	})
	if err != nil || len(seen) != 0 {
		t.Errorf("walk after the swap saw %v (%v)", seen, err)
	}
	if err := walkFiles(ctx, root, existing, func(string, fs.FileInfo) error { return nil }); err == nil || !files.IsEscape(err) {
		t.Errorf("walk of a swapped start: %v", err)
	}
}

// runGuarded runs fn and fails the test if it does not return soon: a
// blocking open would hang the tool forever. The timer only fails the test;
// the assertions are on what fn returns.
func runGuarded[T any](t *testing.T, what string, fn func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- fn() }()
	select {
	case v := <-done:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("%s blocked (a special file must be refused without waiting)", what)
		var zero T
		return zero
	}
}

// FIFOs (and other special files) are refused at once with a coded error:
// opening one for reading would otherwise wait for a writer forever.
func TestSpecialFilesRefusedWithoutBlocking(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{})
	fifo := filepath.Join(h.ws, "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("LOUD NOTE: cannot make a FIFO here: %v", err)
	}
	h.write("dir/a.txt", "findme\n")
	if err := syscall.Mkfifo(filepath.Join(h.ws, "dir", "pipe.txt"), 0o644); err != nil {
		t.Fatal(err)
	}

	r := runGuarded(t, "read of a FIFO", func() tools.Result { return h.run(ToolRead, map[string]any{"file_path": "pipe"}) })
	if text := mustCode(t, r, CodeFsNotRegular); !strings.Contains(text, "named pipe") {
		t.Errorf("read FIFO: %q", text)
	}
	r = runGuarded(t, "write to a FIFO", func() tools.Result {
		return h.run(ToolWrite, map[string]any{"file_path": "pipe", "content": "x"})
	})
	mustCode(t, r, CodeFsNotRegular)
	r = runGuarded(t, "edit of a FIFO", func() tools.Result {
		return h.run(ToolEdit, map[string]any{"file_path": "pipe", "old_string": "a", "new_string": "b"})
	})
	mustCode(t, r, CodeFsNotRegular)
	// The I/O layer alone, as if the FIFO appeared after the checks.
	p, err := resolvePath(h.ws, "pipe")
	if err != nil {
		t.Fatal(err)
	}
	if err := runGuarded(t, "loadFile of a FIFO", func() error { _, err := loadFile(p); return err }); codeOf(err) != CodeFsNotRegular {
		t.Errorf("loadFile FIFO: %v", err)
	}
	if err := runGuarded(t, "writeFile to a FIFO", func() error { _, err := writeFile(p, []byte("x"), 0o644, false); return err }); codeOf(err) != CodeFsNotRegular {
		t.Errorf("writeFile FIFO: %v", err)
	}
	// Searches skip it.
	for _, backend := range grepBackends(t) {
		hb := newHarness(t, Options{Grep: backend})
		hb.ws, hb.env.ws = h.ws, h.ws
		r := runGuarded(t, "grep over a FIFO", func() tools.Result { return hb.run(ToolGrep, map[string]any{"pattern": "findme"}) })
		if text := mustOK(t, r); !strings.Contains(text, "dir/a.txt") {
			t.Errorf("%s grep: %q", backend, text)
		}
	}
	r = runGuarded(t, "glob over a FIFO", func() tools.Result { return h.run(ToolGlob, map[string]any{"pattern": "**/*"}) })
	if text := mustOK(t, r); text != "dir/a.txt" {
		t.Errorf("glob listed %q", text)
	}
	// A device is refused the same way (root only can make one).
	if os.Geteuid() == 0 {
		if err := syscall.Mknod(filepath.Join(h.ws, "null"), syscall.S_IFCHR|0o666, int(unixMkdev(1, 3))); err != nil {
			t.Logf("LOUD NOTE: cannot make a device node here (%v); the device case is not covered", err)
		} else {
			r := runGuarded(t, "read of a device", func() tools.Result { return h.run(ToolRead, map[string]any{"file_path": "null"}) })
			if text := mustCode(t, r, CodeFsNotRegular); !strings.Contains(text, "character device") {
				t.Errorf("read device: %q", text)
			}
		}
	}
}

func unixMkdev(major, minor uint32) uint64 {
	return uint64(major)<<8 | uint64(minor)
}

// As root, what write creates in a workspace owned by an unprivileged user
// (the sandbox's) belongs to that user, parents included; existing files
// keep their owner and mode.
func TestWriteGivesNewFilesToTheWorkspaceOwner(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("!!! SKIPPING: ownership of created files needs root (run the tests as root to cover it) !!!")
	}
	const nobody = 65534
	h := newHarness(t, Options{})
	if err := os.Chown(h.ws, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	h.write("mine.txt", "root's\n") // created by the test, as root
	if err := os.Chmod(filepath.Join(h.ws, "mine.txt"), 0o640); err != nil {
		t.Fatal(err)
	}

	mustOK(t, h.run(ToolWrite, map[string]any{"file_path": "made/for/you.txt", "content": "hello\n"}))
	for _, p := range []string{"made", "made/for", "made/for/you.txt"} {
		if uid, gid := ownerOf(t, filepath.Join(h.ws, p)); uid != nobody || gid != nobody {
			t.Errorf("%s is owned by %d:%d, want %d:%d", p, uid, gid, nobody, nobody)
		}
	}

	mustOK(t, h.run(ToolRead, map[string]any{"file_path": "mine.txt"}))
	mustOK(t, h.run(ToolEdit, map[string]any{"file_path": "mine.txt", "old_string": "root's", "new_string": "still root's"}))
	mustOK(t, h.run(ToolWrite, map[string]any{"file_path": "mine.txt", "content": "overwritten\n"}))
	if uid, _ := ownerOf(t, filepath.Join(h.ws, "mine.txt")); uid != 0 {
		t.Errorf("the root-owned file now belongs to %d", uid)
	}
	if info, err := os.Stat(filepath.Join(h.ws, "mine.txt")); err != nil || info.Mode().Perm() != 0o640 {
		t.Errorf("mode after edit: %v, %v", info.Mode(), err)
	}
	if h.read("mine.txt") != "overwritten\n" {
		t.Error("content")
	}

	// A workspace owned by root: nothing is given away.
	h2 := newHarness(t, Options{})
	mustOK(t, h2.run(ToolWrite, map[string]any{"file_path": "a/b.txt", "content": "x"}))
	if uid, _ := ownerOf(t, filepath.Join(h2.ws, "a", "b.txt")); uid != 0 {
		t.Errorf("file in a root workspace owned by %d", uid)
	}
}

func ownerOf(t *testing.T, p string) (uid, gid uint32) {
	t.Helper()
	info, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	st := info.Sys().(*syscall.Stat_t)
	return st.Uid, st.Gid
}
