// Package ws is the WebSocket protocol at /ws: one socket per browser tab
// (or script), JSON text frames, multiplexed by session. docs/protocol.md is
// the public description; this package implements it.
//
// A Hub serves the sockets. Each connection has a reader (requests are
// handled in arrival order, so two followups keep their order; only
// compact, a model call, runs beside the reader and answers when done), a
// writer that only writes ready bytes from a send queue bounded in bytes,
// and a keepalive that pings every 20 s and re-authorizes the connection's
// subscriptions. coder/websocket does the handshake, the reads and the
// control frames; the data frames are written by this package (wire.go):
// frames offered to a connection whose queue is empty and whose writer is
// idle are written straight from the offering goroutine with one
// non-blocking writev, allocating nothing, and only what the socket does
// not take waits in the queue for the writer. So a viewer that keeps up
// costs one system call per frame at most, not a writer wake-up, a
// library lock and a flush.
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
// subscriber, a large fan-out split over one goroutine per core. N viewers
// of a session cost one decode and one render per class and event, not N.
// Everything the projector takes at once is one pass: each subscriber's
// frames of the pass go out together, in one write while its socket keeps
// up (a new turn's status and inbox frames and first events, say). When
// the projector falls behind (a busy machine), the events waiting for it
// go out as one fan-out: one frame of them all to each batch subscriber,
// deltas merged, so falling behind makes the next fan-outs cheaper
// instead of the lag longer.
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
