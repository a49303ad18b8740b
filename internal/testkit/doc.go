// Package testkit builds the real parts that test suites share: a SQLite
// store with the batched writer, a scripted fake model route through the
// real OpenAI adapter, the whole app on a loopback server with users, and
// checks of a session log against its stored copy.
//
// Only _test.go files import it. It imports internal/app, so the in-package
// (non _test) tests of any package the app is built from cannot use it; their
// external test packages can.
package testkit
