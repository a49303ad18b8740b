// Package ws is the WebSocket protocol at /ws: one socket per browser tab
// (or script), JSON text frames, multiplexed by session. docs/protocol.md is
// the public description; this package implements it.
//
// A Hub serves the sockets. Each connection has a reader (requests are
// handled in arrival order, so two followups keep their order; only
// compact, a model call, runs beside the reader and answers when done), a
// writer draining a bounded send queue, and a keepalive that pings every
// 20 s and re-authorizes the connection's subscriptions.
//
// Subscriptions share one "topic" per session and hub: the topic pins the
// agent (so it is not unloaded while watched), subscribes once to its log
// and to the manager's live notifications, encodes every frame once and
// offers it to each subscriber's queue. A new subscriber replays seq in
// (since, from) from the in-memory log, page by page, where from is the
// first seq the topic had not yet fanned out when the subscriber joined;
// live frames arriving meanwhile are held for it and sent after the replay,
// so there is no gap and no duplicate. A subscriber whose queue overflows
// is disconnected with close code 4008 and resumes with since.
package ws
