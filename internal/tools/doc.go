// Package tools is the framework of what the model can call: tool
// definitions, the registry and its per-agent scopes, argument validation,
// the per-call pipeline (pre-execute, approval, guards, body, post-execute),
// live output, and the step scheduler that runs one assistant message's tool
// calls. The built-in tools (bash, read, write, edit, glob, grep, ask_user,
// todo_write) are in package builtin; other tools are registered the same
// way.
//
// The driver owns the session log; this package reaches it only through the
// Env (per-agent host services) and Sink (per-step logging) interfaces. Both
// take the call's or the step's ctx; where a record must survive a cancel
// (results, a call's final output) the framework passes a ctx without the
// cancellation, as the driver's loop does for the turn's final writes.
package tools
