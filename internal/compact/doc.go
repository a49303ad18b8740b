// Package compact keeps long sessions inside the model's context window
// (upstream-core §6): a token meter that folds a session log into the current
// context size, a tool-result pruner, and summary compaction that replaces
// the head of the history with a checkpoint written by the model.
//
// Everything compaction does is logged: compaction/prune is immediately
// followed by the replacing tool/result; compaction/start, compaction/summary,
// the replacing user/message (the checkpoint) and compaction/end form a
// bracket, and exactly one compaction/end closes every start. An unmatched
// compaction/start after the last session/end-seed is the compaction lock;
// one left by a crash is closed on cold load by the session's crash repair
// (compaction/end{error: session.CompactionInterrupted}).
//
// Install hooks pressure compaction (agent/pre-step) and overflow recovery
// (agent/request-error) into a driver.Manager; Compact runs a manual
// compaction on an idle agent; OnLoad makes a bracket still open in a
// loaded log dead.
package compact
