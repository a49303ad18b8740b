// Package static holds the browser assets, embedded in the binary and
// served under /static/: the stylesheets, the small ES-module client (no
// build step) and the icon. Add new asset patterns to the go:embed line.
package static

import "embed"

// FS is the embedded asset tree (files at its root).
//
//go:embed *.css *.js *.svg
var FS embed.FS
