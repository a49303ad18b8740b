// Package static holds the browser assets, embedded in the binary and
// served under /static/. Add new asset patterns to the go:embed line.
package static

import "embed"

// FS is the embedded asset tree (app.css at its root).
//
//go:embed *.css
var FS embed.FS
