// Package importer turns a JSON-lines session log into Harness session
// events: the events a new session is seeded with. It has one job and does
// no I/O beyond reading its input (a ZIP archive is spooled to a temporary
// file, removed when Read returns): no storage, no HTTP, no agents.
//
// # Formats
//
// Read recognizes two formats:
//
//   - A Harness export (GET /api/sessions/{id}/export): one stored event per
//     line, as session.MarshalEvent wrote it, with no header line. It is
//     recognized by its first line starting with {"seq": (Harness's encoder
//     writes seq first; DeepSeek Harness writes type first). Its events are
//     taken byte for byte and only validated: an export imports losslessly.
//   - A DeepSeek Harness session log, format version 0
//     (/work/shared/corpus/README.md): an optional header line
//     {"type":"session","version":0,...} (seeds have none), then events.
//     A header without a version is read as version 0; any other version is
//     refused. It may come as DeepSeek Harness stores it, zstd-compressed
//     (session.jsonl.zstd, one frame per written batch), or inside its
//     export ZIP (the one *.jsonl[.zstd] at the archive's root; subagent
//     logs and media are not imported). Line numbers count the
//     decompressed lines.
//
// # Converting a DeepSeek Harness log
//
// Events keep their seq, time and data unless Harness needs a change:
//
//   - Packed rows (reasoning-chunks, text-chunks, tool-call-chunks) are
//     unpacked (Unpack): delta k becomes an assistant/chunk with seq seq0+k,
//     time time0+sum(dt[:k]) and a *-delta chunk (tool-call deltas carry the
//     call id; the first also its name).
//   - The older inline message shape is wrapped: user/message data without
//     id/role gets them (id "imported-<seq>"); assistant/message fields
//     (content, provenance) move into data.message with source
//     {kind: model, provider, model}; a flat tool/result
//     {callId, content, isError} becomes a tool-result message.
//   - request/header: tools given as a placeholder string are dropped, tools
//     given as a list of names become schemas with just a name; a config
//     without provider (or model) gets the last one the log named, else
//     "unknown". request/context gets the same.
//   - session/title: a source object {kind} becomes its kind (llm → model);
//     messageSeqs is dropped.
//   - Image blocks: Harness has no attachment store and its model routes take
//     no image input, and the image bytes are not in the log anyway. An
//     upstream image block ({type: image, attachment: {attachmentId,
//     mediaType, name, ...}}) becomes the text block "[image: NAME, TYPE]"
//     (NAME is the file name, else the shortened attachment id), wherever it
//     appears: user messages, tool results, queued messages.
//   - Types Harness does not know (subagent/descriptor, hook/*, sandbox/mode,
//     tool-workflow/*, ...) are kept and marked ignorable: the log loads,
//     folds skip them, the transcript does not show them.
//   - Events Harness requires inside a turn (request/header,
//     request/context, todo/write, approvals, questions, tool/output) found
//     outside any turn describe no request and are dropped with a note; the
//     remaining events are then renumbered contiguously from 0 (surface
//     ops, sourceEventSeqs and compaction ranges follow).
//   - A last line cut short (no final newline, not valid JSON: a torn
//     write) is dropped with a note, as DeepSeek Harness drops a torn final
//     record on load; a leading UTF-8 byte order mark is ignored.
//
// # Result
//
// The events Read returns pass session.Load and session.CheckInvariants. A
// log that ends inside an open turn, or with a compaction bracket left
// open, is closed the way crash repair closes one (session.RepairClosers:
// compaction/end{error: interrupted}, synthetic tool results, step/end,
// turn/end{interrupted}). The caller seeds a session with them (a seed: the
// history is fixed; session/end-seed follows it).
//
// # Errors
//
// Every refusal is an *Error naming the 1-based physical line and the
// reason, e.g. `line 12: tool/result cites call "x" that no tool/call
// opened`. Codes: invalid_json, unknown_version, bad_seq (a gap or a
// duplicate), unsupported (an event Harness cannot convert), invalid (the
// converted log breaks a log rule or invariant), too_large, read.
//
// Caps: at most MaxBytes (64 MiB) of input (decompressed, for a zstd log)
// and MaxEvents (1,000,000) events after unpacking.
package importer
