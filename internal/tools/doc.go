// Package tools holds what the model can call: tool definitions, the registry
// and its per-agent scopes, argument validation, the per-call pipeline
// (pre-execute, approval, guards, body, post-execute) and the step scheduler
// that runs one assistant message's tool calls, plus the built-in tools (bash,
// read, write, edit, glob, grep, ask_user, todo_write).
//
// The driver owns the session log; this package reaches it only through the
// Env (per-agent host services) and Sink (per-step logging) interfaces.
package tools
