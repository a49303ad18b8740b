package files

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func write(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func names(l Listing) string {
	var out []string
	for _, e := range l.Entries {
		out = append(out, e.Name+":"+string(e.Kind))
	}
	return strings.Join(out, " ")
}

func TestList(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, "b.txt", "bee")
	write(t, dir, "A.go", "package a\n")
	write(t, dir, ".hidden", "h")
	write(t, dir, "zdir/inner.txt", "in")
	write(t, dir, "Adir/x", "x")
	if err := os.Symlink("b.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}

	l, err := List(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(l), "Adir:dir zdir:dir .hidden:file A.go:file b.txt:file link:symlink pipe:other"; got != want {
		t.Fatalf("listing\n got %s\nwant %s", got, want)
	}
	if l.Path != "." || l.Truncated {
		t.Fatalf("listing %+v", l)
	}
	for _, e := range l.Entries {
		if e.Name == "b.txt" && (e.Size != 3 || e.Path != "b.txt" || time.Since(e.ModTime) > time.Hour) {
			t.Errorf("entry %+v", e)
		}
	}
	sub, err := List(dir, "./zdir/")
	if err != nil || sub.Path != "zdir" || names(sub) != "inner.txt:file" || sub.Entries[0].Path != "zdir/inner.txt" {
		t.Fatalf("sub listing %+v, %v", sub, err)
	}
	if _, err := List(dir, "b.txt"); !errors.Is(err, ErrNotDir) {
		t.Errorf("list a file: %v", err)
	}
	if _, err := List(dir, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("list missing: %v", err)
	}
	if _, err := List(filepath.Join(dir, "gone"), "."); !errors.Is(err, ErrNotFound) {
		t.Errorf("list a missing root: %v", err)
	}
	// Listing a FIFO as a directory does not block.
	if _, err := List(dir, "pipe"); !errors.Is(err, ErrNotDir) {
		t.Errorf("list a FIFO: %v", err)
	}
}

func TestListCap(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for i := range MaxEntries + 5 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%04d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l, err := List(dir, ".")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Entries) != MaxEntries || !l.Truncated {
		t.Fatalf("%d entries, truncated %v", len(l.Entries), l.Truncated)
	}
	write(t, dir, "small/a", "")
	if l, err := List(dir, "small"); err != nil || l.Truncated || len(l.Entries) != 1 {
		t.Fatalf("small %+v %v", l, err)
	}
}

// Absolute paths, ".." and symlinks out are refused; a symlink out is
// listed (as a symlink) but never followed.
func TestEscapes(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	write(t, outside, "secret.txt", "TOP SECRET")
	dir := t.TempDir()
	write(t, dir, "sub/ok.txt", "fine")
	for link, target := range map[string]string{"out": outside, "secret": filepath.Join(outside, "secret.txt"), "sub/up": "../../" + filepath.Base(outside)} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"/etc/passwd", "..", "../x", "sub/../../x", "out", "out/secret.txt", "secret", "sub/up/secret.txt"} {
		if _, _, _, _, err := Read(dir, p, 1024); !errors.Is(err, ErrOutside) {
			t.Errorf("read %q: %v, want ErrOutside", p, err)
		}
		if f, _, err := Open(dir, p); !errors.Is(err, ErrOutside) {
			t.Errorf("open %q: %v, want ErrOutside", p, err)
			if f != nil {
				f.Close()
			}
		}
	}
	for _, p := range []string{"/", "/tmp", "..", "out", "sub/up"} {
		if _, err := List(dir, p); !errors.Is(err, ErrOutside) {
			t.Errorf("list %q: %v, want ErrOutside", p, err)
		}
	}
	l, err := List(dir, ".")
	if err != nil {
		t.Fatal(err)
	}
	if got := names(l); got != "sub:dir out:symlink secret:symlink" {
		t.Fatalf("listing %s", got)
	}
	for _, e := range l.Entries {
		if e.Kind == KindSymlink && e.Size > 1024 {
			t.Errorf("symlink %s has the size of its target", e.Name)
		}
	}
	if _, err := Clean("a\x00b"); !errors.Is(err, ErrInvalid) {
		t.Errorf("NUL: %v", err)
	}
	for in, want := range map[string]string{"": ".", ".": ".", "a/../b": "b", "./a//b/": "a/b"} {
		if got, err := Clean(in); err != nil || got != want {
			t.Errorf("Clean(%q) = %q, %v", in, got, err)
		}
	}
	// A symlink inside is followed.
	if err := os.Symlink("sub/ok.txt", filepath.Join(dir, "in")); err != nil {
		t.Fatal(err)
	}
	if b, _, _, _, err := Read(dir, "in", 1024); err != nil || string(b) != "fine" {
		t.Errorf("read through an inside link: %q %v", b, err)
	}
}

func TestRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, "a.go", "package a\n")
	write(t, dir, "big.txt", strings.Repeat("x", 5000))
	write(t, dir, "bin.dat", "PNG\x00\x01\x02")
	write(t, dir, "late-nul.txt", strings.Repeat("y", binarySniff)+"\x00")
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}

	b, info, trunc, bin, err := Read(dir, "a.go", 1024)
	if err != nil || string(b) != "package a\n" || trunc || bin || info.Size() != 10 {
		t.Fatalf("read: %q %v %v %v", b, trunc, bin, err)
	}
	b, info, trunc, bin, err = Read(dir, "big.txt", 1000)
	if err != nil || len(b) != 1000 || !trunc || bin || info.Size() != 5000 {
		t.Fatalf("capped read: %d %v %v %v", len(b), trunc, bin, err)
	}
	if _, _, _, bin, err := Read(dir, "bin.dat", 1024); err != nil || !bin {
		t.Fatalf("binary: %v %v", bin, err)
	}
	if _, _, _, bin, err := Read(dir, "late-nul.txt", 1<<20); err != nil || bin {
		t.Fatalf("a NUL past the sniffed start: binary %v %v", bin, err)
	}
	if _, _, _, _, err := Read(dir, "nope.txt", 10); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing: %v", err)
	}
	if _, _, _, _, err := Read(dir, "a.go/x", 10); !errors.Is(err, ErrNotFound) {
		t.Errorf("below a file: %v", err)
	}
	for _, p := range []string{".", ""} {
		if _, _, _, _, err := Read(dir, p, 10); !errors.Is(err, ErrIsDir) {
			t.Errorf("read %q: %v", p, err)
		}
	}

	// A FIFO is refused at once: no writer is waited for.
	done := make(chan error, 1)
	go func() {
		_, _, _, _, err := Read(dir, "pipe", 10)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotRegular) {
			t.Errorf("FIFO: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("reading a FIFO blocked")
	}

	f, info, err := Open(dir, "big.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	all, err := io.ReadAll(f)
	if err != nil || len(all) != 5000 || info.Size() != 5000 {
		t.Fatalf("open: %d bytes, %v", len(all), err)
	}
}
