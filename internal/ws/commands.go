package ws

import (
	"fmt"

	"harness/internal/service"
	"harness/internal/session"
)

// dispatch runs one request. ok is false when the handler answered itself
// (subscribe answers before its replay starts).
func (c *conn) dispatch(req Request) (Response, bool) {
	ctx, a, svc := c.ctx, c.actor, c.h.svc
	if c.h.beforeDispatch != nil {
		c.h.beforeDispatch(req)
	}
	var err error
	resp := Response{Re: req.ID}
	switch req.Op {
	case OpPing:
	case OpSubscribe:
		return c.subscribe(req)
	case OpUnsubscribe:
		c.unsubscribe(req.Session)
	case OpFollowup, OpSteer:
		mode := service.SendFollowup
		if req.Op == OpSteer {
			mode = service.SendSteer
		}
		resp.MessageID, err = svc.SendMessage(ctx, a, req.Session, service.Message{Content: req.Content, Mode: mode, ClientID: req.ID})
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
	case OpCompact:
		return c.compact(req)
	default:
		err = service.Errorf(service.CodeUnknownOp, "unknown op %q", truncate(string(req.Op), 64))
	}
	if err != nil {
		return Response{Re: req.ID, Error: service.AsError(err)}, true
	}
	resp.OK = true
	return resp, true
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
		resp := Response{Re: req.ID}
		res, err := c.h.svc.Compact(c.ctx, c.actor, req.Session)
		if err != nil {
			resp.Error = service.AsError(err)
		} else {
			resp.OK, resp.Compaction = true, &res
		}
		c.send(mustJSON(resp))
	}()
	return Response{}, false
}
