package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDiskUsage counts what the files of a session take on disk: each
// inode once, symbolic links not followed, directories not counted, and
// sparse files by their blocks, not their length.
func TestDiskUsage(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	write := func(p string, n int) {
		t.Helper()
		if err := os.WriteFile(p, make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "a"), 1<<20)
	if err := os.Link(filepath.Join(dir, "a"), filepath.Join(dir, "a-link")); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(outside, "big"), 4<<20)
	if err := os.Symlink(filepath.Join(outside, "big"), filepath.Join(dir, "big")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "d1", "d2", "d3"), 0o755); err != nil {
		t.Fatal(err)
	}
	sparse, err := os.Create(filepath.Join(dir, "d1", "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	if err := sparse.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	sparse.Close()

	got := diskUsage(t.Context(), dir)
	if got < 1<<20 || got > 1<<20+64<<10 {
		t.Errorf("usage %d, want 1 MiB (and a few blocks at most)", got)
	}
	if both := diskUsage(t.Context(), dir, outside); both < 5<<20 {
		t.Errorf("usage of both directories %d, want at least 5 MiB", both)
	}
}

// TestDiskStatus names the mechanism and why the kernel does not enforce
// the quota here.
func TestDiskStatus(t *testing.T) {
	st := diskStatus(1<<30, t.TempDir())
	if st.Mechanism != DiskMeasured || st.QuotaBytes != 1<<30 || !strings.Contains(st.Why, "file system of") {
		t.Errorf("%+v", st)
	}
}

// BenchmarkDiskUsage is the walk the measured quota makes after every
// write or exec call: a workspace of 10,000 small files in 100 folders
// (a modest node_modules).
func BenchmarkDiskUsage(b *testing.B) {
	dir := b.TempDir()
	for d := range 100 {
		sub := filepath.Join(dir, fmt.Sprintf("d%03d", d))
		if err := os.Mkdir(sub, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 100 {
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%03d", f)), []byte("x"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	for b.Loop() {
		if n := diskUsage(b.Context(), dir); n < 10_000*512 {
			b.Fatalf("usage %d: the files were not all counted", n)
		}
	}
}
