// Package testkit builds the real parts that test suites share: the whole
// server stack without HTTP (NewStack: a SQLite store with the batched
// writer, model routes, tools, workspaces, the agent manager and the
// service), a scripted fake model route through the real OpenAI adapter,
// and checks of a session log against its stored copy.
//
// Only _test.go files import it. It imports neither internal/app nor the
// edges (ws, web), so their in-package tests can use it; the app served
// over HTTP is in testkit/apptest. The in-package tests of a part the stack
// is built from (driver, service, ...) cannot use it; their external test
// packages can.
package testkit
