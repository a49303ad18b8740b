package e2e_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// contrastJS defines, in the page, the WCAG 2 contrast helpers the checks
// use: parse a computed colour, blend it over what is behind it, and the
// ratio of two colours.
const contrastJS = `
window.wcag = (() => {
  const parse = (s) => {
    const m = s.match(/rgba?\(([^)]+)\)/);
    if (!m) return null;
    const p = m[1].split(/[ ,\/]+/).filter(Boolean).map(Number);
    return { r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1 };
  };
  const over = (fg, bg) => ({
    r: fg.r * fg.a + bg.r * (1 - fg.a), g: fg.g * fg.a + bg.g * (1 - fg.a), b: fg.b * fg.a + bg.b * (1 - fg.a), a: 1,
  });
  const lum = (c) => {
    const ch = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * ch(c.r) + 0.7152 * ch(c.g) + 0.0722 * ch(c.b);
  };
  const ratio = (a, b) => { const x = lum(a), y = lum(b); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
  // The colour behind el: its own background, or its nearest ancestor's,
  // translucent layers blended from the page up.
  const background = (el) => {
    const layers = [];
    for (let n = el; n instanceof Element; n = n.parentElement) {
      const c = parse(getComputedStyle(n).backgroundColor);
      if (c && c.a > 0) { layers.push(c); if (c.a >= 1) break; }
    }
    let bg = { r: 255, g: 255, b: 255, a: 1 };
    for (const l of layers.reverse()) bg = over(l, bg);
    return bg;
  };
  const hex = (c) => "#" + [c.r, c.g, c.b].map((v) => Math.round(v).toString(16).padStart(2, "0")).join("");
  return { parse, over, ratio, background, hex };
})();
true`

// setDarkPreference emulates the OS colour-scheme preference.
func (b *browser) setDarkPreference(dark bool) {
	b.t.Helper()
	v := "light"
	if dark {
		v = "dark"
	}
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: v}},
	}); err != nil {
		b.t.Fatal(err)
	}
}

// setTheme forces the page's theme ("light", "dark") or follows the OS ("").
func (b *browser) setTheme(theme string) {
	b.t.Helper()
	eval[bool](b, `(() => { const r = document.documentElement; if (`+jsString(theme)+`) r.dataset.theme = `+jsString(theme)+`; else delete r.dataset.theme; return true; })()`)
}

// codeSample is a message whose quoted echo holds code blocks in several
// languages, so the demo model's answer has many chroma token types.
const codeSample = "Code tour:\n\n" +
	"```go\n// Package p is a sample.\npackage p\n\nimport \"fmt\"\n\ntype T struct{ N int `json:\"n\"` }\n\nfunc (t *T) Hello(name string) error {\n\tconst max = 0x1F\n\tx := []byte{'a', 'b'}\n\tfmt.Printf(\"%d %s\\n\", len(x), name)\n\treturn nil\n}\n```\n\n" +
	"```python\n@decorator\nclass Foo(Base):\n    \"\"\"Docstring.\"\"\"\n    def bar(self, x=1.5, *args):\n        # comment\n        return f\"{x!r}\" if x is not None else r'\\d+' + str(True)\n```\n\n" +
	"```javascript\nexport const f = async (a, b = 2) => { let re = /ab+c/gi; this.x = `t${a}`; return null ?? undefined; };\n```\n\n" +
	"```html\n<!DOCTYPE html>\n<div class=\"x\" id='y'>&amp; text <!-- note --></div>\n```\n\n" +
	"```css\n@media (max-width: 10px) { .a > #b::before { color: #fff !important; margin: -1.5em; } }\n```\n\n" +
	"```bash\n#!/bin/sh\nfor f in *.go; do echo \"$f\" | grep -q x && exit 1; done; export PATH=$HOME/bin:$PATH\n```\n\n" +
	"```json\n{\"a\": [1, 2.5, true, null], \"b\": \"s\"}\n```\n\n" +
	"```diff\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n```\n\n" +
	"```sql\nSELECT id, COUNT(*) FROM t WHERE name LIKE 'a%' GROUP BY id; -- c\n```\n\n" +
	"```rust\n#[derive(Debug)]\nfn main() -> Result<(), Box<dyn Error>> { let mut v: Vec<u8> = vec![1u8]; println!(\"{:?}\", v); Ok(()) }\n```\n\n" +
	"```yaml\nkey: value # c\nlist:\n  - 1\n  - \"two\"\n  - &anchor yes\n```"

// Every chroma token class the code-block formatter writes (those in the
// sample answer, and a span of every class chroma.css styles) has at least
// 4.5:1 contrast against its code block, in the light and dark theme,
// forced or from the OS preference.
func TestCodeTokenContrast(t *testing.T) {
	t.Parallel()
	s := newServer(t, serverOpts{})
	b := s.newBrowser()
	b.login(adminName, adminPass)
	b.newSession("ask")
	b.send(codeSample)
	b.waitTurns(1)
	b.waitJS("the highlighted code blocks", `document.querySelectorAll(".item.assistant .code .chroma span[class]").length > 100 && document.querySelectorAll(".item.assistant .code").length >= 11`)
	eval[bool](b, contrastJS)

	// The rendered tokens, and one probe span per class of chroma.css in a
	// real code block (classes no sample produced: generic, error, ...).
	classes := eval[[]string](b, `(() => {
	  const block = [...document.querySelectorAll(".item.assistant .code")].at(-1);
	  const code = block.querySelector("pre.chroma code");
	  const seen = new Set();
	  for (const sheet of document.styleSheets) {
	    if (!sheet.href?.endsWith("/chroma.css")) continue;
	    const walk = (rules) => { for (const r of rules) {
	      if (r.cssRules) walk(r.cssRules);
	      for (const m of (r.selectorText ?? "").matchAll(/\.chroma \.([\w-]+)/g)) seen.add(m[1]);
	    } };
	    walk(sheet.cssRules);
	  }
	  const probes = document.createElement("span");
	  probes.className = "line contrast-probes";
	  for (const c of seen) {
	    if (/^(line|ln|lnt|hl|lntd|lntable|lnlinks|cl)$/.test(c)) continue; // not tokens: no line numbers are drawn
	    const s = document.createElement("span");
	    s.className = c;
	    s.textContent = "Wx" + c;
	    probes.append(s);
	  }
	  code.append(probes);
	  return [...seen];
	})()`)
	if len(classes) < 80 {
		t.Fatalf("chroma.css styles %d classes, want the whole formatter's set", len(classes))
	}
	rendered := eval[[]string](b, `[...new Set([...document.querySelectorAll(".item.assistant .code .chroma span[class]:not(.line):not(.contrast-probes *)")].map(s => s.className))]`)
	if len(rendered) < 25 {
		t.Errorf("the sample rendered only %d token classes: %v", len(rendered), rendered)
	}

	check := func(name string, dark bool) {
		t.Helper()
		low := eval[[]string](b, `(() => {
		  const out = [];
		  for (const s of document.querySelectorAll(".item.assistant .code .chroma span[class]:not(.line):not(.contrast-probes)")) {
		    if (!s.textContent.trim()) continue; // whitespace shows no glyph
		    const bg = wcag.background(s);
		    const fg = wcag.over(wcag.parse(getComputedStyle(s).color), bg);
		    const r = wcag.ratio(fg, bg);
		    if (r < 4.5) out.push(s.className + " " + JSON.stringify(s.textContent.slice(0, 12)) + " " + wcag.hex(fg) + " on " + wcag.hex(bg) + ": " + r.toFixed(2));
		  }
		  return [...new Set(out)];
		})()`)
		for _, l := range low {
			t.Errorf("%s: %s", name, l)
		}
		// The block's background is the theme's, not a leftover of the
		// other one.
		bg := eval[string](b, `wcag.hex(wcag.background(document.querySelector(".item.assistant .code pre.chroma")))`)
		if want := map[bool]string{false: "#f0f2f5", true: "#1e222b"}[dark]; bg != want {
			t.Errorf("%s: code background %s, want %s", name, bg, want)
		}
	}
	b.setTheme("light")
	check("forced light", false)
	b.setTheme("dark")
	check("forced dark", true)
	b.setTheme("")
	b.setDarkPreference(true)
	check("system dark", true)
	b.setDarkPreference(false)
	check("system light", false)
	b.setDarkPreference(true)
	b.setTheme("light")
	check("forced light on a dark system", false)
	b.shot("code-dark")
}
