package web

import (
	"harness/internal/service"
	"harness/web/templates"
)

// queueView is the session's live queue as the chat page shows it.
func queueView(sess service.Session) templates.QueueView {
	var v templates.QueueView
	for _, m := range sess.Queue.Steering {
		v.Steering = append(v.Steering, templates.QueueItem{ID: m.ID, Text: m.Text(), Images: len(m.Images())})
	}
	for _, m := range sess.Queue.Queued {
		v.Queued = append(v.Queued, templates.QueueItem{ID: m.ID, Text: m.Text(), Images: len(m.Images())})
	}
	return v
}

// interactionViews are the session's pending approvals and questions as
// the chat page shows them. "question" is the wire kind of a question
// (driver.KindQuestion, docs/protocol.md); anything else is an approval.
func interactionViews(sess service.Session) []templates.InteractionView {
	out := make([]templates.InteractionView, 0, len(sess.Interactions))
	for _, in := range sess.Interactions {
		out = append(out, templates.InteractionView{
			ID: in.ID, Question: in.Kind == "question",
			ToolName: in.ToolName, Arguments: in.Arguments, Reason: in.Reason, Preview: in.Preview,
			Questions: in.Questions,
		})
	}
	return out
}
