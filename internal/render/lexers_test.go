package render

import (
	"testing"

	lexers "harness/third_party/chromalexers"
)

// TestLazyLexerRegistry: the registry built on first use (third_party/
// chromalexers) has the lexers upstream's has, those written in Go over
// the embedded definitions of the same name, and the analysers its init
// functions attach.
func TestLazyLexerRegistry(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"go", "python", "yaml", "bash", "typescript", "markdown", "html", "mysql", "dns", "zed", "php"} {
		if lexers.Get(name) == nil {
			t.Errorf("no lexer for %q", name)
		}
	}
	if got := lexers.Get("go"); got != lexers.Go {
		t.Errorf("go is %v, want the lexer written in Go", got.Config().Name)
	}
	if n := len(lexers.Names(false)); n < 250 {
		t.Errorf("%d lexers, want upstream's ~280", n)
	}
	if l := lexers.Analyse("$ORIGIN example.com.\n@ IN SOA ns1.example.com. admin.example.com. (1 2 3 4 5)\n"); l == nil || l.Config().Name != "dns" {
		t.Errorf("a zone file is analysed as %v, want dns (its analyser is attached)", l)
	}
}
