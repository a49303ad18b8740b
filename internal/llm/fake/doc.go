// Package fake is a scripted OpenAI-compatible chat completions server for
// tests, end-to-end runs and the offline demo model. It speaks the DeepSeek
// flavour of the wire over real HTTP: server-sent `chat.completion.chunk`
// events with `reasoning_content`, tool-call fragments by wire index, a
// trailing usage chunk with `prompt_cache_hit_tokens`, then `data: [DONE]`.
//
// # Scripts
//
// A Script is a list of Replies consumed one per request, plus an optional
// Responder for dynamic behaviour. A Reply gives reasoning, text and tool
// calls (split into deltas), or explicit Frames; pacing (Delay); usage; the
// finish reason; or instead an HTTP error (status, body, Retry-After) or a
// Fault: a stall (for a while or until the client goes away, optionally
// with keep-alive comments), a cut (no [DONE]), a malformed chunk or an
// in-stream error. Every request is recorded (Requests, WaitRequests) so a
// test can assert what the model was sent. LoadScript reads a JSON script:
//
//	{"replies": [
//	  {"reasoning": "Let me look.", "toolCalls": [{"name": "read", "arguments": {"file_path": "go.mod"}, "fragments": 3}]},
//	  {"text": "It is a Go module.", "chunks": 5, "delay": "20ms",
//	   "usage": {"promptTokens": 900, "completionTokens": 12, "cacheHitTokens": 768}},
//	  {"error": {"status": 429, "message": "Rate limit reached", "retryAfter": "2"}},
//	  {"text": "never finished", "fault": {"kind": "cut", "after": 1}}
//	]}
//
// # The offline demo model
//
// NewDemo (and StartDemo, which also returns an llm.Provider named "demo")
// answers deterministically from the conversation, so it works across
// restarts. It reads the last message, skipping runtime-context snapshots
// (user messages starting with "Current runtime context"):
//
//   - "run: <command>": a reasoning line, then a `bash` call with
//     {"command": "<command>", "description": "Run <command>"}; after its
//     result, a markdown answer quoting the output in a fenced block.
//   - "read: <path>": a `read` call with {"file_path": "<path>"}; then a
//     summary (line count and the first lines).
//   - "write: <path>" with the content on the following lines: a `write`
//     call with {"file_path": "<path>", "content": "<content>"}; then a
//     confirmation.
//   - "ask: <question>": an `ask_user` call with {"questions": [{"id": "q1",
//     "question": "<question>", "options": [{"label": "yes"}, {"label":
//     "no"}]}]}; then an answer naming the choice read from the result
//     {"answers": [{"id": "q1", "selected": ["yes"]}]}.
//   - "todo: a; b; c": a `todo_write` call with {"todos": [{"content": "a",
//     "status": "pending"}, ...]}; then a confirmation listing them.
//   - "call: TOOL {json}": a call of TOOL (any tool the request offers,
//     built-in or not) with exactly those arguments ({} when none); after
//     its result, an answer summarising it (its size and first lines, or
//     the rule of the tool above). Arguments that are not JSON, a missing
//     name or a tool the request does not offer get an answer saying so,
//     and no call. "call: task {...}" runs a subagent (the driver's task
//     tool), whose prompt is read by these same rules.
//   - "long: N": a reply streamed as N text chunks; "think: N": N reasoning
//     chunks, then a short text (N is capped at 100000).
//   - a message with images (image_url content parts, as a route that
//     takes images sends them): a list with one line per image, read from
//     the bytes the request carried: the media type sniffed from them, the
//     size in bytes and the pixel dimensions from the image's header
//     ("image/png, 1234 bytes, 64 x 48 pixels"; PNG, JPEG, GIF and WebP),
//     then the message's text quoted. This rule comes before the others.
//   - anything else: a short reasoning block and a markdown reply quoting
//     the prompt and listing these rules.
//
// When the last message is a tool result, the demo answers for the tool
// call it belongs to; a result starting with "Error" is reported as a
// failure. Requests with purpose session-title get the first words of the
// first user message; compaction requests get a short summary. When the
// request disables thinking, replies carry no reasoning (except think:).
// Usage is deterministic (about four bytes per token; everything but the
// newest message counts as cache hits). Deltas are paced 4 ms apart by
// default; WithChunkDelay(0) or WithTimeScale(0) removes the pauses.
//
// # Standalone
//
//	go run ./cmd/fakellm -addr 127.0.0.1:8089            # the demo model
//	go run ./cmd/fakellm -addr 127.0.0.1:8089 -script s.json
//
//	curl -N http://127.0.0.1:8089/v1/chat/completions \
//	  -H 'content-type: application/json' \
//	  -d '{"model":"demo","stream":true,"messages":[{"role":"user","content":"long: 20"}]}'
//
// prints `data: {...}` chunks as they are streamed, then `data: [DONE]`.
package fake
