package textdiff

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestComputeExact(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, a, b, want string
		added, removed   int
	}{
		{"equal", "x\n", "x\n", "", 0, 0},
		{"create", "", "a\nb\n", "--- /dev/null\n+++ b/f\n@@ -0,0 +1,2 @@\n+a\n+b\n", 2, 0},
		{"change middle", "1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\nX\n6\n7\n8\n9\n",
			"--- /dev/null\n+++ b/f\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+X\n 6\n 7\n 8\n", 1, 1},
		{"no newline at end", "a\nb", "a\nb\n",
			"--- /dev/null\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n", 1, 1},
		{"delete all", "a\n", "", "--- /dev/null\n+++ b/f\n@@ -1 +0,0 @@\n-a\n", 0, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := Compute("/dev/null", "b/f", tc.a, tc.b)
			if d.Unified != tc.want {
				t.Fatalf("diff:\n%s\nwant:\n%s", d.Unified, tc.want)
			}
			if d.Added != tc.added || d.Removed != tc.removed {
				t.Fatalf("stats +%d -%d, want +%d -%d", d.Added, d.Removed, tc.added, tc.removed)
			}
		})
	}
}

// TestComputeAppliesWithPatch checks the diffs against GNU patch: applying
// the diff to the old text must give the new text.
func TestComputeAppliesWithPatch(t *testing.T) {
	t.Parallel()
	patchBin, err := exec.LookPath("patch")
	if err != nil {
		t.Skip("LOUD SKIP: GNU patch is not installed; cannot cross-check diffs")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range 40 {
		a := randomText(rng, rng.IntN(60))
		b := mutate(rng, a)
		if n%7 == 0 {
			b = strings.TrimSuffix(b, "\n")
		}
		d := Compute("a/f.txt", "b/f.txt", a, b)
		if a == b {
			continue
		}
		dir := t.TempDir()
		f := filepath.Join(dir, "f.txt")
		if err := os.WriteFile(f, []byte(a), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(patchBin, "-s", "--no-backup-if-mismatch", f)
		cmd.Stdin = strings.NewReader(d.Unified)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("case %d: patch failed: %v\n%s\ndiff:\n%s", n, err, out, d.Unified)
		}
		got, _ := os.ReadFile(f)
		if string(got) != b {
			t.Fatalf("case %d: patched text differs\ngot:\n%q\nwant:\n%q\ndiff:\n%s", n, got, b, d.Unified)
		}
	}
}

func TestComputeBounded(t *testing.T) {
	t.Parallel()
	// A middle too large for the LCS table still gives a correct, bounded diff.
	var a, b strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&a, "old line %d\n", i)
		fmt.Fprintf(&b, "new line %d with a much longer text to blow the output cap %s\n", i, strings.Repeat("x", 80))
	}
	d := Compute("a/f", "b/f", a.String(), b.String())
	if d.Added != 3000 || d.Removed != 3000 {
		t.Fatalf("stats +%d -%d", d.Added, d.Removed)
	}
	if !d.Truncated || len(d.Unified) > MaxOutput+len(TruncatedMarker)+1 || !strings.HasSuffix(d.Unified, TruncatedMarker+"\n") {
		t.Fatalf("not truncated properly: truncated=%v len=%d", d.Truncated, len(d.Unified))
	}
}

func randomText(rng *rand.Rand, n int) string {
	var sb strings.Builder
	for range n {
		fmt.Fprintf(&sb, "line %d\n", rng.IntN(8))
	}
	return sb.String()
}

func mutate(rng *rand.Rand, s string) string {
	lines := splitLines(s)
	for range rng.IntN(6) + 1 {
		switch k := rng.IntN(3); {
		case k == 0 && len(lines) > 0:
			i := rng.IntN(len(lines))
			lines = append(lines[:i], lines[i+1:]...)
		case k == 1:
			i := rng.IntN(len(lines) + 1)
			lines = append(lines[:i], append([]string{fmt.Sprintf("new %d\n", rng.IntN(100))}, lines[i:]...)...)
		case len(lines) > 0:
			lines[rng.IntN(len(lines))] = fmt.Sprintf("changed %d\n", rng.IntN(100))
		}
	}
	return strings.Join(lines, "")
}
