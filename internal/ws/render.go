package ws

import (
	"harness/internal/auth"
	"harness/internal/session"
)

// RenderContext is what a renderer may know about the viewer.
type RenderContext struct {
	Session string
	Role    auth.SessionRole
	Actor   *auth.Actor
}

// Renderer turns an event into an HTML fragment for subscribers that asked
// for render "html". It runs on the connection's writer goroutine; an
// error or "" sends the frame without html.
type Renderer interface {
	Render(ev session.Event, ctx RenderContext) (string, error)
}

// NopRenderer renders nothing (the default until the UI provides one).
type NopRenderer struct{}

// Render returns "".
func (NopRenderer) Render(session.Event, RenderContext) (string, error) { return "", nil }
