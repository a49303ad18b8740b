// Package service is the one application layer behind the REST API and the
// WebSocket: every operation on sessions (create, list, read, send, cancel,
// queue edits, approvals, answers, mode and model, manual compaction,
// rename, archive, fork, delete, export, members, share links) is a method
// here. Session summaries carry the context meter (compact.Meter, shared
// with the automatic compaction triggers and the renderer).
//
// Every method takes (ctx, actor, ...) and calls auth.Service.Authorize (or
// CanCreateSession) before it touches anything, so a refused actor changes
// nothing. Errors are *Error values with a stable Code and a message that is
// safe to show; transports map the code to an HTTP status (Code.HTTPStatus)
// or to the error.code of a WebSocket answer.
//
// # Fork
//
// Fork(atSeq) copies the source log's prefix [0, atSeq] as the seed of a new
// session owned by the actor (any actor who may read the source may fork
// it). atSeq must be an existing seq outside any turn (the last turn/start
// at or before it has its turn/end at or before it); a point inside a turn
// is refused with CodeOpenTurn. Without atSeq the fork takes the whole log,
// which is refused the same way while a turn runs. The child records its
// lineage (ParentID, ForkSeq = the boundary seq, SeedLength = the seed's
// event count), inherits title, permission mode and model route (they are in
// the seed or copied from the parent's row), starts with an empty queue and
// gets a new, empty workspace directory: files are not copied, since a
// workspace may be large and the parent may still be changing it.
//
// # Changes
//
// SubscribeChanges reports sessions created, updated (renamed, archived,
// mode or route changed, a member added) and deleted or no longer visible
// to some users, so the WebSocket can keep every connected sidebar current.
package service
