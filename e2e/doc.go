// Package e2e holds the browser tests: real Chromium (Debian's
// /usr/bin/chromium, headless, --no-sandbox, --disable-background-networking,
// one browser with a fresh profile per test) driven by chromedp against the
// real server
// (internal/app on a random loopback port, a temp data directory, the
// offline demo model or a scripted fake model), over real HTTP and
// WebSocket. Every scenario fails on any console error or uncaught
// exception in the page.
//
// Run them with `go test ./e2e/...`. Without /usr/bin/chromium they are
// skipped with a loud message, unless HARNESS_E2E_REQUIRE_CHROMIUM=1 (CI),
// which makes them fail. HARNESS_E2E_PERF=1 adds the browser performance
// checks; -screenshots rewrites e2e/testdata/screenshots.
package e2e
