package ws

import (
	"encoding/json"

	"harness/internal/auth"
	"harness/internal/llm"
	"harness/internal/session"
)

// Projector is a session's projection for live HTML: the topic's
// goroutine applies every event in order, then asks for the event's
// fragment once per viewer class among the subscribers that asked for
// HTML. A fragment depends on the events applied and the class, nothing
// else, so every viewer of a class gets the same bytes.
type Projector interface {
	Apply(ev session.Event) error
	Fragment(canAnswer bool, viewerID string) (string, error)
}

// Projections makes the projection of session id whose log is l, having
// folded the events with seq < upto; every later event is Applied to it in
// order.
type Projections func(id string, l *session.Log, upto int64) Projector

// viewerClass is what a fragment may depend on about its viewer: whether
// they may answer prompts, and who they are (their own messages).
type viewerClass struct {
	canAnswer bool
	viewer    string // user id; "" for share links and tokens without a user
}

func classOf(role auth.SessionRole, a *auth.Actor) viewerClass {
	var c viewerClass
	if a.IsUser() {
		c.viewer = a.UserID
		c.canAnswer = role.Can(auth.ActionAnswer)
	}
	return c
}

// deltaOf decodes a text or reasoning delta; nil for any other event.
func deltaOf(ev session.Event) *delta {
	if ev.Type != session.TypeAssistantChunk {
		return nil
	}
	var c session.AssistantChunk
	if json.Unmarshal(ev.Data, &c) != nil {
		return nil
	}
	if c.Chunk.Type != llm.ChunkTextDelta && c.Chunk.Type != llm.ChunkReasoningDelta {
		return nil
	}
	env := ev
	env.Data = nil
	return &delta{kind: string(c.Chunk.Type), turn: c.Turn, step: c.Step, index: c.Chunk.Index, text: c.Chunk.Text, env: env}
}
