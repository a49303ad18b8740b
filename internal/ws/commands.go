package ws

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"harness/internal/auth"
	"harness/internal/driver"

	"harness/internal/llm"
	"harness/internal/service"
	"harness/internal/session"
)

// dispatch runs one request. ok is false when the handler answered itself
// (subscribe answers before its replay starts).
func (c *conn) dispatch(req Request) (Response, bool) {
	if c.h.beforeDispatch != nil {
		c.h.beforeDispatch(req)
	}
	switch req.Op {
	case OpPing:
		return Response{Re: req.ID, OK: true}, true
	case OpSubscribe:
		return c.subscribe(req)
	case OpUnsubscribe:
		c.unsubscribe(req.Session)
		return Response{Re: req.ID, OK: true}, true
	case OpCompact:
		return c.compact(req)
	}
	return c.h.run(c.ctx, c.actor, req), true
}

// run runs a session command; one for a session another replica owns is
// forwarded there and answered with the owner's response. An owner that
// cannot be reached (dead, its lease not yet taken) is waited for, up to
// TakeoverWait: the command runs again, here or forwarded, as soon as the
// session moved. A refusal did nothing; a forward that got no answer may
// have run on the old owner: a send under the same id is stored once, and
// any other command is answered as the session's state then stands.
func (h *Hub) run(ctx context.Context, a *auth.Actor, req Request) Response {
	deadline := time.Now().Add(h.wait)
	for {
		resp := h.command(ctx, a, req)
		var no *driver.NotOwnerError
		if resp.Error == nil || h.remote == nil || !errors.As(resp.Error, &no) {
			return resp
		}
		fwd, err := h.forward(ctx, a, req)
		if err == nil {
			return fwd
		}
		if !time.Now().Before(deadline) || !sleepCtx(ctx, takeoverPoll) {
			h.log.Warn("forward a command to the session's owner", "session", req.Session, "op", req.Op, "err", err)
			return Response{Re: req.ID, Error: service.Moving(err)}
		}
	}
}

// takeoverPoll is how often a command waiting for a takeover tries again.
const takeoverPoll = 100 * time.Millisecond

// forward sends req to the session's owner; an error says it got no valid
// answer.
func (h *Hub) forward(ctx context.Context, a *auth.Actor, req Request) (Response, error) {
	raw, err := json.Marshal(req)
	if err != nil {
		return Response{}, err
	}
	out, err := h.remote.Forward(ctx, req.Session, a, raw)
	if err != nil {
		return Response{}, err
	}
	var fwd Response
	if err := json.Unmarshal(out, &fwd); err != nil {
		return Response{}, fmt.Errorf("forwarded command: malformed answer: %w", err)
	}
	fwd.Re = req.ID
	return fwd, nil
}

// sleepCtx waits d; false when ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// ExecuteForwarded runs a session command another replica forwarded here
// for its client (internal/replica) and returns the Response frame. It is
// not forwarded again: a session that is not this replica's either is
// answered unavailable.
func (h *Hub) ExecuteForwarded(ctx context.Context, a *auth.Actor, raw []byte) []byte {
	var req Request
	if err := json.Unmarshal(raw, &req); err != nil {
		return mustJSON(Response{Error: service.Errorf(service.CodeBadRequest, "malformed forwarded request")})
	}
	switch req.Op {
	case OpPing, OpSubscribe, OpUnsubscribe:
		return mustJSON(Response{Re: req.ID, Error: service.Errorf(service.CodeBadRequest, "op %q is not forwarded", req.Op)})
	}
	return mustJSON(h.command(ctx, a, req))
}

// command runs one session command here.
func (h *Hub) command(ctx context.Context, a *auth.Actor, req Request) Response {
	svc := h.svc
	var err error
	resp := Response{Re: req.ID}
	switch req.Op {
	case OpFollowup, OpSteer:
		mode := service.SendFollowup
		if req.Op == OpSteer {
			mode = service.SendSteer
		}
		resp.MessageID, err = svc.SendMessage(ctx, a, req.Session, service.Message{Content: req.Content, Mode: mode, ClientID: req.ID, Attachments: req.Attachments})
	case OpCancel:
		err = svc.Cancel(ctx, a, req.Session, req.KeepInbox)
	case OpInboxEdit:
		err = svc.EditQueueItem(ctx, a, req.Session, req.Item, req.Content)
	case OpInboxRemove:
		err = svc.RemoveQueueItem(ctx, a, req.Session, req.Item)
	case OpInboxSteer:
		err = svc.SteerQueueItem(ctx, a, req.Session, req.Item)
	case OpInboxRun:
		err = svc.RunQueue(ctx, a, req.Session)
	case OpInboxClear:
		err = svc.ClearQueue(ctx, a, req.Session)
	case OpApprove:
		err = svc.Approve(ctx, a, req.Session, req.Approval, service.Decision(req.Decision))
	case OpRevokeTool:
		err = svc.RevokeTool(ctx, a, req.Session, req.Tool)
	case OpAnswer:
		err = svc.Answer(ctx, a, req.Session, req.Question, req.Answers)
	case OpSetMode:
		err = svc.SetMode(ctx, a, req.Session, session.PermissionMode(req.Mode))
	case OpSetModel:
		err = svc.SetModel(ctx, a, req.Session, req.Provider, req.Model)
	case OpSetEffort:
		err = svc.SetEffort(ctx, a, req.Session, llm.Effort(req.Effort))
	case OpCompact:
		var res service.CompactResult
		if res, err = svc.Compact(ctx, a, req.Session); err == nil {
			resp.Compaction = &res
		}
	case OpRetry:
		resp.MessageID, err = svc.RetryTurn(ctx, a, req.Session, req.Turn, req.ID)
	default:
		err = service.Errorf(service.CodeUnknownOp, "unknown op %q", truncate(string(req.Op), 64))
	}
	if err != nil {
		return Response{Re: req.ID, Error: service.AsError(err)}
	}
	resp.OK = true
	return resp
}

// compact runs a manual compaction beside the reader and answers when it
// is done: the summary is a model call, and the reader must go on reading
// (pongs, a cancel, other sessions' commands) meanwhile. It ends with the
// connection.
func (c *conn) compact(req Request) (Response, bool) {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return Response{Re: req.ID, Error: service.Errorf(service.CodeUnavailable, "connection closing")}, true
	}
	c.wg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		defer func() {
			if r := recover(); r != nil {
				c.h.log.Error("websocket compact panicked", "session", req.Session, "panic", fmt.Sprint(r))
				c.sendErr(req.ID, service.Errorf(service.CodeInternal, "internal error"))
			}
		}()
		resp := c.h.run(c.ctx, c.actor, req)
		c.send(mustJSON(resp))
	}()
	return Response{}, false
}
