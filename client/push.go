package client

import (
	"encoding/json"
)

// Push channels.
const (
	ChEvent                = "session/event"
	ChEvents               = "session/events"
	ChReplayDone           = "replay/done"
	ChClosed               = "session/closed"
	ChStatus               = "agent/status"
	ChInbox                = "agent/inbox"
	ChInboxInserted        = "agent/inbox/inserted"
	ChInboxClaimed         = "agent/inbox/claimed"
	ChInboxDiscarded       = "agent/inbox/discarded"
	ChInteractionRequested = "interaction/requested"
	ChInteractionResolved  = "interaction/resolved"
	ChAllowed              = "approvals/allowed"
	ChWorkspace            = "workspace/progress"
	ChAgentError           = "agent/error"
	ChSessionsChanged      = "sessions/changed"
	ChError                = "error"
)

// CloseSlowConsumer is the close code of a connection cut because it fell
// behind; resume with since.
const CloseSlowConsumer = 4008

// Push is one server push. Which fields are set depends on Ch (see
// docs/protocol.md).
type Push struct {
	Ch string `json:"ch"`
	// Session is the session id; for sessions/changed it is Row.ID.
	Session string `json:"-"`
	Event   *Event `json:"event,omitempty"`
	// Events are the events of a session/events push (subscriptions with
	// Batch), in seq order; HTML is then their fragments joined.
	Events      []Event      `json:"events,omitempty"`
	HTML        string       `json:"html,omitempty"`
	Head        *int64       `json:"head,omitempty"`
	Status      string       `json:"status,omitempty"`
	Queue       *Queue       `json:"queue,omitempty"`
	Message     *Message     `json:"message,omitempty"`
	Turn        int          `json:"turn,omitempty"`
	Interaction *Interaction `json:"interaction,omitempty"`
	Reason      string       `json:"reason,omitempty"`
	// Tools are the tools allowed for the session (approvals/allowed).
	Tools []string `json:"tools,omitempty"`
	// Workspace is a step of the workspace's preparation
	// (workspace/progress).
	Workspace *WorkspaceProgress `json:"workspace,omitempty"`
	// Failure is agent/error's failure; Error is the coded error of error
	// and session/closed pushes.
	Failure *Failure `json:"-"`
	Error   *Error   `json:"-"`
	// Row and Deleted are sessions/changed's session.
	Row     *SessionRow `json:"-"`
	Deleted bool        `json:"-"`
	// Raw is the whole frame.
	Raw json.RawMessage `json:"-"`
}

// UnmarshalJSON decodes the channel-dependent fields.
func (p *Push) UnmarshalJSON(b []byte) error {
	var w wireFrame
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	return w.push(p, append(json.RawMessage(nil), b...))
}

// wireFrame is any server frame: an answer (re set) or a push. The reader
// decodes each frame once into it.
type wireFrame struct {
	Re         *string        `json:"re"`
	OK         bool           `json:"ok"`
	MessageID  string         `json:"messageId"`
	Role       string         `json:"role"`
	Context    *ContextMeter  `json:"context"`
	Compaction *CompactResult `json:"compaction"`

	Ch          string             `json:"ch"`
	Session     json.RawMessage    `json:"session"`
	Event       *Event             `json:"event"`
	Events      []Event            `json:"events"`
	HTML        string             `json:"html"`
	Head        *int64             `json:"head"`
	Status      string             `json:"status"`
	Queue       *Queue             `json:"queue"`
	Message     *Message           `json:"message"`
	Turn        int                `json:"turn"`
	Interaction *Interaction       `json:"interaction"`
	Reason      string             `json:"reason"`
	Tools       []string           `json:"tools"`
	Workspace   *WorkspaceProgress `json:"workspace"`
	Err         json.RawMessage    `json:"error"`
}

// response builds the answer of an answer frame.
func (w *wireFrame) response() (Response, error) {
	r := Response{Re: *w.Re, OK: w.OK, MessageID: w.MessageID, Role: w.Role, Context: w.Context, Compaction: w.Compaction}
	if len(w.Err) > 0 && string(w.Err) != "null" {
		r.Error = &Error{}
		if err := json.Unmarshal(w.Err, r.Error); err != nil {
			return r, err
		}
	}
	return r, nil
}

// push fills p from a push frame; raw is the whole frame.
func (w *wireFrame) push(p *Push, raw json.RawMessage) error {
	*p = Push{
		Ch: w.Ch, Event: w.Event, Events: w.Events, HTML: w.HTML, Head: w.Head, Status: w.Status, Queue: w.Queue,
		Message: w.Message, Turn: w.Turn, Interaction: w.Interaction, Reason: w.Reason, Tools: w.Tools, Workspace: w.Workspace, Raw: raw,
	}
	if len(w.Session) > 0 && w.Session[0] == '{' {
		var row struct {
			SessionRow
			Deleted bool `json:"deleted"`
		}
		if err := json.Unmarshal(w.Session, &row); err != nil {
			return err
		}
		p.Session, p.Deleted = row.ID, row.Deleted
		if !row.Deleted {
			r := row.SessionRow
			p.Row = &r
		}
	} else if len(w.Session) > 0 {
		if err := json.Unmarshal(w.Session, &p.Session); err != nil {
			return err
		}
	}
	if len(w.Err) > 0 && string(w.Err) != "null" {
		if p.Ch == ChAgentError {
			p.Failure = &Failure{}
			return json.Unmarshal(w.Err, p.Failure)
		}
		p.Error = &Error{}
		return json.Unmarshal(w.Err, p.Error)
	}
	return nil
}

// WorkspaceProgress is a step of a workspace being prepared (a clone), or
// its end (Done; Failed says why).
type WorkspaceProgress struct {
	Kind    string `json:"kind"`
	Source  string `json:"source"`
	Phase   string `json:"phase,omitempty"`
	Percent int    `json:"percent,omitempty"`
	Line    string `json:"line,omitempty"`
	Done    bool   `json:"done,omitempty"`
	Failed  string `json:"failed,omitempty"`
}
