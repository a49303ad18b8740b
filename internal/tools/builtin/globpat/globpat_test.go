package globpat

import (
	"errors"
	"testing"
)

func TestMatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"*.go", "main.go", true},
		{"*.go", "cmd/main.go", false},
		{"**/*.go", "main.go", true},
		{"**/*.go", "a/b/c/main.go", true},
		{"**/*.go", "a/b/c/main.js", false},
		{"src/**", "src/a/b", true},
		{"src/**", "src", true},
		{"src/**/test_*.py", "src/test_x.py", true},
		{"src/**/test_*.py", "src/a/b/test_x.py", true},
		{"src/**/test_*.py", "lib/a/test_x.py", false},
		{"a/**/b/**/c", "a/x/b/y/z/c", true},
		{"a/**/b/**/c", "a/b/c", true},
		{"a/**/b/**/c", "a/c", false},
		{"**/*.{ts,tsx}", "web/app.tsx", true},
		{"**/*.{ts,tsx}", "web/app.ts", true},
		{"**/*.{ts,tsx}", "web/app.js", false},
		{"{cmd,internal/{a,b}}/*.go", "internal/b/x.go", true},
		{"{cmd,internal/{a,b}}/*.go", "internal/c/x.go", false},
		{"file?.txt", "file1.txt", true},
		{"file[0-9].txt", "filex.txt", false},
		{"./docs/*.md", "docs/readme.md", true},
		{"docs//*.md", "docs/readme.md", true},
		{"**", "anything/at/all", true},
	}
	for _, tc := range tests {
		t.Run(tc.pattern+"~"+tc.name, func(t *testing.T) {
			t.Parallel()
			p, err := Compile(tc.pattern)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Match(tc.name); got != tc.want {
				t.Fatalf("Match(%q, %q) = %v, want %v", tc.pattern, tc.name, got, tc.want)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"", "a{b", "a}b", "[", "x/[a-/y"} {
		if _, err := Compile(p); !errors.Is(err, ErrBadPattern) {
			t.Errorf("Compile(%q) err = %v, want ErrBadPattern", p, err)
		}
	}
	// Brace bombs are refused, not expanded.
	bomb := "{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}"
	if _, err := Compile(bomb); !errors.Is(err, ErrBadPattern) {
		t.Errorf("brace bomb err = %v, want ErrBadPattern", err)
	}
}

func TestHasSlash(t *testing.T) {
	t.Parallel()
	p, _ := Compile("*.go")
	q, _ := Compile("cmd/*.go")
	if p.HasSlash() || !q.HasSlash() {
		t.Fatal("HasSlash wrong")
	}
}
