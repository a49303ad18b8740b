// Package session is the durable session log: the event vocabulary, the
// in-memory append-only Log with its surface (what can become model history),
// deriveMessages, invariants, seeds, fork and crash repair.
//
// It is pure: no I/O, no storage, no HTTP, no model client. Persistence plugs
// in through Options.Sink; live viewers through Log.Subscribe.
package session
