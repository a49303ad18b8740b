package render_test

import "testing"

// TestScriptSinkDetects guards the XSS table itself: the detector must
// flag the raw payloads.
func TestScriptSinkDetects(t *testing.T) {
	t.Parallel()
	for _, p := range []string{
		`<script>alert(1)</script>`, `<img src=x onerror=alert(1)>`, `<a href="javascript:alert(1)">x</a>`,
		`<div style="x">`, `<p id="transcript">`, `<a href="https://x" target="_blank">x</a>`, `<svg onload=alert(1)>`,
	} {
		if len(scriptSink(t, p)) == 0 {
			t.Errorf("detector misses %q", p)
		}
	}
}
