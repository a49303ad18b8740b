package render_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"harness/internal/render"
)

// -update rewrites the golden files (and web/static/chroma.css).
var update = flag.Bool("update", false, "rewrite golden files")

// golden compares got with testdata/golden/<name>, or rewrites it.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/render -update)", err)
	}
	if !bytes.Equal(want, []byte(got)) {
		t.Errorf("%s differs from the golden file (run with -update after checking the change):\n%s", name, firstDiff(string(want), got))
	}
}

// firstDiff shows where two texts first differ.
func firstDiff(want, got string) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	lo := max(0, i-120)
	return "want …" + want[lo:min(len(want), i+120)] + "…\n got …" + got[lo:min(len(got), i+120)] + "…"
}

// renderItems renders items the way a page does.
func renderItems(t *testing.T, items []render.Item) string {
	t.Helper()
	var buf bytes.Buffer
	if err := render.Items(items).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}
