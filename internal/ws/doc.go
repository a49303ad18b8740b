// Package ws is the WebSocket protocol at /ws: one socket per browser tab
// (or script), JSON text frames, multiplexed by session. docs/protocol.md is
// the public description; this package implements it.
//
// A Hub serves the sockets. Each connection has a reader (requests are
// handled in arrival order, so two followups keep their order; only
// compact, a model call, runs beside the reader and answers when done), a
// writer that only writes ready bytes from a send queue bounded in bytes,
// and a keepalive that pings every 20 s and re-authorizes the connection's
// subscriptions.
//
// Subscriptions share one "topic" per session and hub: the topic pins the
// agent (so it is not unloaded while watched), subscribes once to its log
// and to the manager's live notifications, and runs one goroutine, the
// projector. The log callback (on the appending goroutine, maybe under the
// agent's lock) and the live notifications only queue for it. The
// projector applies each event to the topic's Projector (made when the
// first subscriber asks for HTML), encodes the event once, renders its
// fragment once per viewer class present (may answer prompts, viewer id),
// builds each class's frame once, and offers the ready bytes to every
// subscriber. N viewers of a session cost one decode and one render per
// class and event, not N.
//
// A new subscriber replays seq in (since, from) from the in-memory log,
// page by page, where from is the first seq the projector had not yet
// fanned out when the subscriber joined; live frames arriving meanwhile are
// held for it and sent after the replay, so there is no gap and no
// duplicate. Subscribers that ask for batches get the replay in
// session/events pages, and their live events as queue items that the
// writer joins with the ones queued behind them into one session/events
// frame, merging runs of deltas of one block: a reader that falls behind
// gets fewer, larger frames. Only a connection whose queue would pass its
// byte bound (Options.SendBytes, 32 MiB) is cut with close code 4008; it
// resumes with since.
package ws
