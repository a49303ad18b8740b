package service

import (
	"context"
	"strings"

	"harness/internal/auth"
	"harness/internal/driver"
	"harness/internal/llm"
	"harness/internal/session"
)

// SendMessage sends a person's message to a session as a followup (its own
// turn) or a steer (the running turn's next step) and returns the message
// id. The message records who sent it. It returns once the message is
// durable. Its images (m.Attachments, uploaded to the session first) are
// image blocks after the text, referring to the stored attachments; the
// text may then be empty. Images to a route that does not take them are
// refused (unsupported_content) before anything is queued.
func (s *Service) SendMessage(ctx context.Context, a *auth.Actor, id string, m Message) (string, error) {
	content, err := checkContent(m.Content, len(m.Attachments) > 0)
	if err != nil {
		return "", err
	}
	mode := m.Mode
	if mode == "" {
		mode = SendFollowup
	}
	if mode != SendFollowup && mode != SendSteer {
		return "", Errorf(CodeBadRequest, "mode must be followup or steer")
	}
	if len(m.ClientID) > 128 {
		return "", Errorf(CodeBadRequest, "client id is longer than 128 bytes")
	}
	if _, err := s.Authorize(ctx, a, id, auth.ActionWrite); err != nil {
		return "", err
	}
	// Refused before anything is queued while the store refuses writes:
	// nothing is kept, and a retry with the same key stores it once. A
	// keyed send is first looked up (below): its key may name a message
	// an earlier attempt left queued or a turn claimed.
	notWritable := s.store.Writable(ctx)
	if notWritable != nil && m.ClientID == "" {
		return "", s.fail(ctx, "send message", notWritable)
	}
	images, err := s.imageBlocks(ctx, id, m.Attachments)
	if err != nil {
		return "", err
	}
	if err := s.workspaceReady(ctx, id); err != nil {
		return "", err
	}
	ag, release, err := s.agent(ctx, id)
	if err != nil {
		if notWritable != nil {
			return "", s.fail(ctx, "send message", notWritable)
		}
		return "", err
	}
	defer release()
	route, err := s.checkRoute(ctx, ag)
	if err != nil {
		return "", err
	}
	if err := checkImages(route, len(images) > 0); err != nil {
		return "", err
	}
	msg := llm.Message{ID: llm.NewID(), Role: llm.RoleUser, Content: make([]llm.ContentBlock, 0, 1+len(images)),
		Source: llm.Source{Kind: llm.SourceUser, UserID: a.UserID, Name: displayName(a), ClientID: m.ClientID}}
	if strings.TrimSpace(content) != "" {
		msg.Content = append(msg.Content, llm.Text(content))
	}
	msg.Content = append(msg.Content, images...)
	if notWritable != nil {
		if repeat, err := ag.Repeat(msg, notWritable); repeat {
			return "", s.fail(ctx, "send message", err)
		}
		return "", s.fail(ctx, "send message", notWritable)
	}
	target := session.TargetNextTurn
	if mode == SendSteer {
		target = session.TargetNextStep
	}
	sent, err := ag.Send(ctx, msg, target)
	if err != nil {
		return "", s.fail(ctx, "send message", err)
	}
	return sent, nil
}

// checkContent refuses oversized text, and empty text unless the message
// has images.
func checkContent(c string, hasImages bool) (string, error) {
	if len(c) > MaxMessageBytes {
		return "", Errorf(CodeTooLarge, "message is larger than %d KiB", MaxMessageBytes>>10)
	}
	if strings.TrimSpace(c) == "" && !hasImages {
		return "", Errorf(CodeBadRequest, "message is empty")
	}
	return c, nil
}

// checkRoute refuses input for a session whose model route is gone (e.g. a
// provider removed from the configuration since); it returns the route.
func (s *Service) checkRoute(ctx context.Context, ag *driver.Agent) (llm.ProviderInfo, error) {
	rt := Route{}
	if sel := ag.Log().State().Model; sel != nil {
		rt = Route{Provider: sel.Provider, Model: sel.Model}
	} else if row, err := s.store.GetSession(ctx, ag.ID()); err == nil {
		rt = s.routeOf(row.Provider, row.Model)
	}
	if rt.Provider == "" {
		rt.Provider, _ = s.providers.Default()
	}
	p, ok := s.providers.Get(rt.Provider)
	if !ok {
		return llm.ProviderInfo{}, Errorf(CodeUnavailable, "model route %q is not available", rt.Provider)
	}
	return p.Info(), nil
}

// Cancel aborts the running turn; unless keepInbox, the queue is cleared
// too. Cancelling an idle session only clears the queue.
func (s *Service) Cancel(ctx context.Context, a *auth.Actor, id string, keepInbox bool) error {
	if _, err := s.Authorize(ctx, a, id, auth.ActionWrite); err != nil {
		return err
	}
	ag, release, err := s.agent(ctx, id)
	if err != nil {
		return err
	}
	defer release()
	ag.Cancel(session.CancelCause{Kind: session.CauseUser, UserID: a.UserID}, keepInbox)
	return nil
}

// EditQueueItem replaces the text of a queued message.
func (s *Service) EditQueueItem(ctx context.Context, a *auth.Actor, id, item, content string) error {
	c, err := checkContent(content, false)
	if err != nil && item != "" { // a missing item is reported first, by queueItem
		return err
	}
	return s.queueItem(ctx, a, id, item, "edit queue item", func(ag *driver.Agent) error {
		return ag.EditPending(ctx, item, []llm.ContentBlock{llm.Text(c)})
	})
}

// RemoveQueueItem removes a queued message.
func (s *Service) RemoveQueueItem(ctx context.Context, a *auth.Actor, id, item string) error {
	return s.queueItem(ctx, a, id, item, "remove queue item", func(ag *driver.Agent) error {
		return ag.RemovePending(ctx, item)
	})
}

// SteerQueueItem moves a queued followup into the running turn ("steer
// now").
func (s *Service) SteerQueueItem(ctx context.Context, a *auth.Actor, id, item string) error {
	return s.queueItem(ctx, a, id, item, "steer queue item", func(ag *driver.Agent) error {
		return ag.SteerPending(ctx, item)
	})
}

// queueItem runs op, an action on the queued message item, on the
// writable agent of session id.
func (s *Service) queueItem(ctx context.Context, a *auth.Actor, id, item, what string, op func(*driver.Agent) error) error {
	if item == "" {
		return Errorf(CodeBadRequest, "item is required")
	}
	ag, release, err := s.writable(ctx, a, id)
	if err != nil {
		return err
	}
	defer release()
	if err := op(ag); err != nil {
		return s.fail(ctx, what, err)
	}
	return nil
}

// RunQueue starts a paused queue (left by Stop, or parked after a blocked
// or failed turn): the idle agent runs the next queued message now, then
// the rest in order. A running agent answers busy; an empty queue
// item_not_found.
func (s *Service) RunQueue(ctx context.Context, a *auth.Actor, id string) error {
	ag, release, err := s.writable(ctx, a, id)
	if err != nil {
		return err
	}
	defer release()
	if _, err := s.checkRoute(ctx, ag); err != nil {
		return err
	}
	if err := ag.RunNext(ctx); err != nil {
		return s.fail(ctx, "run queue", err)
	}
	return nil
}

// ClearQueue removes every queued message; a running turn goes on.
func (s *Service) ClearQueue(ctx context.Context, a *auth.Actor, id string) error {
	ag, release, err := s.writable(ctx, a, id)
	if err != nil {
		return err
	}
	defer release()
	if err := ag.ClearQueue(ctx); err != nil {
		return s.fail(ctx, "clear queue", err)
	}
	return nil
}

// writable authorizes a write and returns the loaded agent, pinned until
// release is called (see agent).
func (s *Service) writable(ctx context.Context, a *auth.Actor, id string) (*driver.Agent, func(), error) {
	return s.agentFor(ctx, a, id, auth.ActionWrite)
}

// agentFor authorizes act and returns the loaded agent, pinned until
// release is called. While the store refuses writes the change is refused
// before anything is logged.
func (s *Service) agentFor(ctx context.Context, a *auth.Actor, id string, act auth.Action) (*driver.Agent, func(), error) {
	if _, err := s.Authorize(ctx, a, id, act); err != nil {
		return nil, nil, err
	}
	if err := s.store.Writable(ctx); err != nil {
		return nil, nil, s.fail(ctx, "check the store", err)
	}
	return s.agent(ctx, id)
}

// Approve answers a pending approval: allow runs the tool call once,
// allow-session runs it and every later call of the same tool in the
// session without asking (until revoked), deny rejects it. The first
// answer wins; later ones get not_pending.
func (s *Service) Approve(ctx context.Context, a *auth.Actor, id, approval string, d Decision) error {
	if approval == "" {
		return Errorf(CodeBadRequest, "approval is required")
	}
	outcome, ok := d.outcome()
	if !ok {
		return Errorf(CodeBadRequest, "decision must be allow, allow-session or deny")
	}
	ag, release, err := s.agentFor(ctx, a, id, auth.ActionAnswer)
	if err != nil {
		return err
	}
	defer release()
	if err := ag.Decide(ctx, approval, outcome, by(a)); err != nil {
		return s.fail(ctx, "approve", err)
	}
	return nil
}

// RevokeTool ends "allow for this session" for tool: its calls need
// approval again. Revoking a tool that is not allowed is a no-op.
func (s *Service) RevokeTool(ctx context.Context, a *auth.Actor, id, tool string) error {
	if tool == "" {
		return Errorf(CodeBadRequest, "tool is required")
	}
	if len(tool) > 128 {
		return Errorf(CodeBadRequest, "tool is longer than 128 bytes")
	}
	ag, release, err := s.writable(ctx, a, id)
	if err != nil {
		return err
	}
	defer release()
	if err := ag.RevokeTool(ctx, tool, by(a)); err != nil {
		return s.fail(ctx, "revoke tool", err)
	}
	return nil
}

// Answer answers a pending question batch; every question needs an answer.
func (s *Service) Answer(ctx context.Context, a *auth.Actor, id, question string, answers []session.Answer) error {
	if question == "" {
		return Errorf(CodeBadRequest, "question is required")
	}
	if len(answers) == 0 {
		return Errorf(CodeBadAnswer, "answers are required")
	}
	ag, release, err := s.agentFor(ctx, a, id, auth.ActionAnswer)
	if err != nil {
		return err
	}
	defer release()
	if err := ag.Answer(ctx, question, answers, by(a)); err != nil {
		return s.fail(ctx, "answer", err)
	}
	return nil
}
