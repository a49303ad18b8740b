package builtin

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkGrepGo measures the pure Go grep backend over 200 files of 200
// lines each, through the full pipeline.
func BenchmarkGrepGo(b *testing.B) {
	h := newHarness(b, Options{Grep: GrepGo})
	var content strings.Builder
	for i := range 200 {
		fmt.Fprintf(&content, "line %d: some ordinary text of a source file\n", i)
	}
	for i := range 200 {
		h.write(fmt.Sprintf("pkg%d/file%d.go", i%10, i), content.String())
	}
	for b.Loop() {
		h.env.rec = &recorder{}
		if r := h.run(ToolGrep, map[string]any{"pattern": `line 1[0-9]7:`}); r.IsError {
			b.Fatal(resultText(r))
		}
	}
}
