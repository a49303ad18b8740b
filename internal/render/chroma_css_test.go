package render

import (
	"regexp"
	"strings"
	"testing"

	"github.com/alecthomas/chroma/v2"
	"github.com/alecthomas/chroma/v2/styles"
)

// Every token rule of the generated stylesheet reaches MinTokenContrast
// against the code block (or its own background), in both themes; the
// browser check is e2e/contrast_test.go.
func TestChromaCSSContrast(t *testing.T) {
	t.Parallel()
	css, err := ChromaCSS(styles.Get(LightStyle), styles.Get(DarkStyle))
	if err != nil {
		t.Fatal(err)
	}
	rule := regexp.MustCompile(`^\s*/\* (\w+) \*/ (:root\S* )?\.chroma \.(\w+) \{(.*)\}$`)
	colour := regexp.MustCompile(`(?:^|[ ;])color: (#[0-9a-f]{6})`)
	bgColour := regexp.MustCompile(`background-color: (#[0-9a-f]{6})`)
	checked := 0
	for _, line := range strings.Split(css, "\n") {
		m := rule.FindStringSubmatch(line)
		if m == nil || strings.HasPrefix(m[1], "Line") {
			continue // not a token (no line numbers are drawn)
		}
		c := colour.FindStringSubmatch(m[4])
		if c == nil {
			continue
		}
		bg := CodeBackgroundLight
		if m[2] != "" {
			bg = CodeBackgroundDark
		}
		if b := bgColour.FindStringSubmatch(m[4]); b != nil {
			bg = b[1]
		}
		checked++
		if r := contrast(chroma.ParseColour(c[1]), chroma.ParseColour(bg)); r < MinTokenContrast {
			t.Errorf("%s .%s %s on %s: contrast %.2f", strings.TrimSpace(m[2]), m[3], c[1], bg, r)
		}
	}
	if checked < 100 {
		t.Fatalf("checked %d token rules, want the whole stylesheet", checked)
	}
	// github-dark has no .nx rule: without the reset the light one shows.
	if !strings.Contains(css, ":root[data-theme=dark] .chroma :where(span) { color: inherit;") {
		t.Error("the dark section does not reset the light token colours")
	}
}

func TestRaiseContrast(t *testing.T) {
	t.Parallel()
	white, black := chroma.ParseColour("#ffffff"), chroma.ParseColour("#000000")
	light, dark := chroma.ParseColour(CodeBackgroundLight), chroma.ParseColour(CodeBackgroundDark)
	for _, tc := range []struct {
		c, bg chroma.Colour
	}{{white, light}, {black, dark}, {chroma.ParseColour("#6a737d"), light}, {chroma.ParseColour("#6e7681"), dark}} {
		got := raiseContrast(tc.c, tc.bg, MinTokenContrast)
		if r := contrast(got, tc.bg); r < MinTokenContrast {
			t.Errorf("%s on %s became %s: %.2f", tc.c, tc.bg, got, r)
		}
	}
	// A readable colour is kept.
	if c := chroma.ParseColour("#cf222e"); raiseContrast(c, light, MinTokenContrast) != c {
		t.Error("a readable colour was changed")
	}
}
