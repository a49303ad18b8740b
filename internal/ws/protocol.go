package ws

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/coder/websocket"

	"harness/internal/auth"
	"harness/internal/driver"
	"harness/internal/llm"
	"harness/internal/service"
	"harness/internal/session"
)

// Op names a client request.
type Op string

// Ops.
const (
	OpSubscribe   Op = "subscribe"
	OpUnsubscribe Op = "unsubscribe"
	OpFollowup    Op = "followup"
	OpSteer       Op = "steer"
	OpCancel      Op = "cancel"
	OpInboxEdit   Op = "inbox.edit"
	OpInboxRemove Op = "inbox.remove"
	OpInboxSteer  Op = "inbox.steer"
	OpInboxRun    Op = "inbox.run"
	OpInboxClear  Op = "inbox.clear"
	OpApprove     Op = "approve"
	OpRevokeTool  Op = "approvals.revoke"
	OpAnswer      Op = "answer"
	OpSetMode     Op = "set_mode"
	OpSetModel    Op = "set_model"
	OpSetEffort   Op = "set_effort"
	OpCompact     Op = "compact"
	OpRetry       Op = "retry"
	OpPing        Op = "ping"
)

// Channel names a server push.
type Channel string

// Push channels.
const (
	ChEvent                Channel = "session/event"
	ChEvents               Channel = "session/events"
	ChReplayDone           Channel = "replay/done"
	ChClosed               Channel = "session/closed"
	ChStatus               Channel = "agent/status"
	ChInbox                Channel = "agent/inbox"
	ChInboxInserted        Channel = "agent/inbox/inserted"
	ChInboxClaimed         Channel = "agent/inbox/claimed"
	ChInboxDiscarded       Channel = "agent/inbox/discarded"
	ChInteractionRequested Channel = "interaction/requested"
	ChInteractionResolved  Channel = "interaction/resolved"
	ChAllowed              Channel = "approvals/allowed"
	ChWorkspace            Channel = "workspace/progress"
	ChAgentError           Channel = "agent/error"
	ChSessionsChanged      Channel = "sessions/changed"
	ChError                Channel = "error"
)

// Close codes beyond RFC 6455's.
const (
	// CloseSlowConsumer: the send queue went past its byte bound
	// (Options.SendBytes, or HoldBytes during a replay), or the client
	// read nothing for Options.StallTimeout while it grew; reconnect and
	// subscribe with since = the last seq received.
	CloseSlowConsumer websocket.StatusCode = 4008
	// CloseRevoked: the credential the socket was opened with no longer
	// stands (logged out, password changed, token or share link revoked,
	// account disabled or deleted, login expired). Every subscription got
	// session/closed first. Sign in again; do not reconnect with the same
	// credential.
	CloseRevoked websocket.StatusCode = 4401
)

// Close reasons.
const (
	ReasonSlowConsumer = "slow consumer: resume with since"
	ReasonShutdown     = "server shutting down"
	ReasonKeepalive    = "keepalive timeout"
	ReasonRevoked      = "credentials revoked: sign in again"
)

// RenderHTML is the subscribe option that adds server-rendered HTML to
// session/event pushes.
const RenderHTML = "html"

// Request is one client frame. Which fields an op reads is in
// docs/protocol.md.
type Request struct {
	ID      string `json:"id"`
	Op      Op     `json:"op"`
	Session string `json:"session,omitempty"`
	Since   *int64 `json:"since,omitempty"`
	Render  string `json:"render,omitempty"`
	// Batch asks for session/events frames (subscribe).
	Batch   bool   `json:"batch,omitempty"`
	Content string `json:"content,omitempty"`
	// Attachments are ids of images uploaded to the session (followup,
	// steer), sent after the text.
	Attachments []string         `json:"attachments,omitempty"`
	KeepInbox   bool             `json:"keepInbox,omitempty"`
	Item        string           `json:"item,omitempty"`
	Approval    string           `json:"approval,omitempty"`
	Decision    string           `json:"decision,omitempty"`
	Question    string           `json:"question,omitempty"`
	Answers     []session.Answer `json:"answers,omitempty"`
	Mode        string           `json:"mode,omitempty"`
	Provider    string           `json:"provider,omitempty"`
	Model       string           `json:"model,omitempty"`
	// Effort is a reasoning effort (set_effort; empty: the model's default).
	Effort string `json:"effort,omitempty"`
	// Tool names a tool (approvals.revoke).
	Tool string `json:"tool,omitempty"`
	// Turn names a failed turn (retry).
	Turn int `json:"turn,omitempty"`
}

// Response answers one request.
type Response struct {
	Re    string         `json:"re"`
	OK    bool           `json:"ok"`
	Error *service.Error `json:"error,omitempty"`
	// MessageID is the id of the message a followup or steer sent.
	MessageID string `json:"messageId,omitempty"`
	// Role is the subscriber's role on the session (subscribe).
	Role auth.SessionRole `json:"role,omitempty"`
	// Context is the session's context meter (subscribe).
	Context *service.ContextMeter `json:"context,omitempty"`
	// Compaction is the outcome of a compact request.
	Compaction *service.CompactResult `json:"compaction,omitempty"`
}

// Push is a server frame on a session's channel (all but sessions/changed,
// whose session field is a row).
type Push struct {
	Ch          Channel             `json:"ch"`
	Session     string              `json:"session,omitempty"`
	Head        *int64              `json:"head,omitempty"`
	Status      driver.Status       `json:"status,omitempty"`
	Queue       *driver.Queue       `json:"queue,omitempty"`
	Message     *llm.Message        `json:"message,omitempty"`
	Turn        int                 `json:"turn,omitempty"`
	Interaction *driver.Interaction `json:"interaction,omitempty"`
	Failure     *llm.Failure        `json:"-"`
	Error       *service.Error      `json:"-"`
	Reason      string              `json:"reason,omitempty"`
	// Tools are the tools allowed for the session (approvals/allowed).
	Tools []string `json:"tools,omitempty"`
	// Workspace is a step of the workspace's preparation
	// (workspace/progress).
	Workspace *driver.WorkspaceProgress `json:"workspace,omitempty"`
}

// MarshalJSON writes error from whichever of Failure (agent/error) and
// Error (error, session/closed) is set.
func (p Push) MarshalJSON() ([]byte, error) {
	type plain Push
	var errField any
	switch {
	case p.Failure != nil:
		errField = p.Failure
	case p.Error != nil:
		errField = p.Error
	}
	return json.Marshal(struct {
		plain
		Err any `json:"error,omitempty"`
	}{plain(p), errField})
}

// changedPush is sessions/changed.
type changedPush struct {
	Ch      Channel `json:"ch"`
	Session any     `json:"session"`
}

// deletedRow is the session of a sessions/changed push for a session that
// is gone (or no longer visible).
type deletedRow struct {
	ID      string `json:"id"`
	Deleted bool   `json:"deleted"`
}

// knownOps are the ops a client may send.
var knownOps = map[Op]bool{
	OpSubscribe: true, OpUnsubscribe: true, OpFollowup: true, OpSteer: true, OpCancel: true,
	OpInboxEdit: true, OpInboxRemove: true, OpInboxSteer: true, OpInboxRun: true, OpInboxClear: true, OpApprove: true, OpRevokeTool: true, OpAnswer: true,
	OpSetMode: true, OpSetModel: true, OpSetEffort: true, OpCompact: true, OpRetry: true, OpPing: true,
}

// decodeRequest parses and checks the envelope of one frame. On error the
// returned Request still carries the id when one could be read, so the
// error can be answered.
func decodeRequest(data []byte) (Request, *service.Error) {
	var req Request
	if err := json.Unmarshal(data, &req); err != nil {
		var probe struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(data, &probe)
		return Request{ID: probe.ID}, service.Errorf(service.CodeBadRequest, "malformed request: %s", jsonProblem(err))
	}
	switch {
	case req.ID == "":
		return req, service.Errorf(service.CodeBadRequest, "id is required")
	case len(req.ID) > 128:
		return Request{}, service.Errorf(service.CodeBadRequest, "id is longer than 128 bytes")
	case req.Op == "":
		return req, service.Errorf(service.CodeBadRequest, "op is required")
	case !knownOps[req.Op]:
		return req, service.Errorf(service.CodeUnknownOp, "unknown op %q", truncate(string(req.Op), 64))
	case req.Op != OpPing && req.Session == "":
		return req, service.Errorf(service.CodeBadRequest, "session is required")
	}
	return req, nil
}

// jsonProblem describes a decoding error without echoing the input.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return "invalid JSON at byte " + strconv.FormatInt(se.Offset, 10)
	case errors.As(err, &te):
		return fmt.Sprintf("field %q must be %s", te.Field, te.Type)
	}
	return "invalid JSON"
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// eventFrameRaw wraps an encoded event in a session/event push.
func eventFrameRaw(sessionID string, raw []byte) []byte {
	b := make([]byte, 0, len(raw)+len(sessionID)+48)
	b = append(b, `{"ch":"session/event","session":`...)
	b = session.AppendJSONString(b, sessionID)
	b = append(b, `,"event":`...)
	b = append(b, raw...)
	return append(b, '}')
}

// batchFrame encodes a session/events push of evs (in seq order). Their
// fragments are joined in "html", each preceded by a marker naming its
// event (<template data-op="at" data-seq="N"></template>), so a client
// applies each event's deltas before the fragments of later events, as it
// would one event at a time. With merge, each run of text or reasoning
// deltas of one block becomes one event: the last delta's envelope and
// seq, the run's text, and "from", the run's first seq. A delta with a
// fragment (a markdown preview) ends its run, so a fragment never lands
// inside a merged event.
func batchFrame(sessionID string, evs []*liveEvent, merge bool) []byte {
	n, hn := 64+len(sessionID), 0
	for _, e := range evs {
		n += len(e.raw) + 1
		if e.html != "" {
			hn += len(e.html) + 64
		}
	}
	b := make([]byte, 0, n+hn+hn/8+16)
	b = append(b, `{"ch":"session/events","session":`...)
	b = session.AppendJSONString(b, sessionID)
	b = append(b, `,"events":[`...)
	for i := 0; i < len(evs); {
		if i > 0 {
			b = append(b, ',')
		}
		j := i + 1
		if merge && evs[i].delta != nil {
			for j < len(evs) && evs[j-1].html == "" && sameBlock(evs[i].delta, evs[j].delta) {
				j++
			}
		}
		if j-i == 1 {
			b = append(b, evs[i].raw...)
		} else {
			b = appendMerged(b, evs[i:j])
		}
		i = j
	}
	b = append(b, ']')
	if hn > 0 {
		html := make([]byte, 0, hn)
		for _, e := range evs {
			if e.html == "" {
				continue
			}
			html = append(html, `<template data-op="at" data-seq="`...)
			html = strconv.AppendInt(html, e.seq, 10)
			html = append(html, `"></template>`...)
			html = append(html, e.html...)
		}
		b = append(b, `,"html":`...)
		b = session.AppendJSONString(b, string(html))
	}
	return append(b, '}')
}

func sameBlock(a, b *delta) bool {
	return b != nil && a.kind == b.kind && a.turn == b.turn && a.step == b.step && a.index == b.index
}

// appendMerged appends one event standing for a run of deltas of one block.
func appendMerged(b []byte, run []*liveEvent) []byte {
	last := run[len(run)-1].delta
	text := make([]byte, 0, 64*len(run))
	for _, e := range run {
		text = append(text, e.delta.text...)
	}
	data := make([]byte, 0, len(text)+96)
	data = append(data, `{"turn":`...)
	data = strconv.AppendInt(data, int64(last.turn), 10)
	data = append(data, `,"step":`...)
	data = strconv.AppendInt(data, int64(last.step), 10)
	data = append(data, `,"chunk":{"type":`...)
	data = session.AppendJSONString(data, last.kind)
	data = append(data, `,"index":`...)
	data = strconv.AppendInt(data, int64(last.index), 10)
	data = append(data, `,"text":`...)
	data = session.AppendJSONString(data, string(text))
	data = append(data, `}}`...)
	env := last.env
	env.Data = data
	start := len(b)
	b, err := session.AppendEvent(b, env)
	if err != nil {
		// The envelope encoded when the event was stored; keep the run
		// unmerged rather than lose it.
		b = b[:start]
		for i, e := range run {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, e.raw...)
		}
		return b
	}
	b = b[:len(b)-1]
	b = append(b, `,"from":`...)
	b = strconv.AppendInt(b, run[0].seq, 10)
	return append(b, '}')
}

// withHTML adds "html" to an encoded session/event frame.
func withHTML(frame []byte, html string) []byte {
	h, _ := json.Marshal(html)
	out := make([]byte, 0, len(frame)+len(h)+9)
	out = append(out, frame[:len(frame)-1]...)
	out = append(out, `,"html":`...)
	out = append(out, h...)
	return append(out, '}')
}

// liveFrame encodes a driver live notification as a push.
func liveFrame(ev driver.LiveEvent) ([]byte, bool) {
	p := Push{Ch: Channel(ev.Kind), Session: ev.Session}
	switch ev.Kind {
	case driver.LiveStatus:
		p.Status = ev.Status
	case driver.LiveQueue:
		p.Queue = ev.Queue
	case driver.LiveInserted, driver.LiveClaimed, driver.LiveDiscarded:
		p.Message, p.Turn = ev.Message, ev.Turn
	case driver.LiveInteractionRequested, driver.LiveInteractionResolved:
		p.Interaction = ev.Interaction
	case driver.LiveError:
		p.Failure, p.Turn = ev.Error, ev.Turn
	case driver.LiveAllowed:
		p.Tools = ev.Tools
	case driver.LiveWorkspace:
		p.Workspace = ev.Workspace
	default:
		return nil, false
	}
	b, err := json.Marshal(p)
	return b, err == nil
}

// mustJSON encodes values that always encode (our own push types).
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(Push{Ch: ChError, Error: service.Errorf(service.CodeInternal, "internal error")})
	}
	return b
}
