package ws

import (
	"context"
	"sync"

	"github.com/coder/websocket"

	"harness/internal/auth"
	"harness/internal/service"
)

// Access is what the hub asks of accounts to cut revoked access at once:
// notices of changes that may take access away, and whether an actor's
// credential still stands. auth.Service implements it.
type Access interface {
	SubscribeAccess(fn func(auth.AccessChange)) (cancel func())
	ActorLive(ctx context.Context, a *auth.Actor) error
}

// accessQueue collects access notices and re-checks the sockets they
// concern from one worker, off the goroutine that made the change (an HTTP
// handler, which must not wait for sockets).
type accessQueue struct {
	h       *Hub
	pending *mailbox[auth.AccessChange]
}

func newAccessQueue(h *Hub) *accessQueue {
	return &accessQueue{h: h, pending: newMailbox[auth.AccessChange]()}
}

// add records a notice; it never blocks.
func (q *accessQueue) add(ch auth.AccessChange) { q.pending.put(ch) }

func (q *accessQueue) run(ctx context.Context) {
	for {
		batch, ok := q.pending.take(nil, ctx.Done())
		if !ok {
			return
		}
		q.recheck(batch)
	}
}

// recheck re-checks, concurrently, every connection a notice of batch
// concerns, and waits for them: one slow socket must not hold up the
// others' cut beyond the database's answer.
func (q *accessQueue) recheck(batch []auth.AccessChange) {
	q.h.mu.Lock()
	var hit []*conn
	for c := range q.h.conns {
		for _, ch := range batch {
			if concerns(ch, c.actor) {
				hit = append(hit, c)
				break
			}
		}
	}
	q.h.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range hit {
		wg.Go(c.recheck)
	}
	wg.Wait()
}

// concerns reports whether a notice names the actor of a socket.
func concerns(ch auth.AccessChange, a *auth.Actor) bool {
	return ch.UserID != "" && a.UserID == ch.UserID ||
		ch.CredentialID != "" && a.CredentialID == ch.CredentialID ||
		ch.ShareLinkID != "" && a.ShareLinkID == ch.ShareLinkID
}

// recheck asks whether the socket's credential still stands (closing the
// socket when it died) and re-authorizes its subscriptions. The keepalive
// and access notices call it; checkMu keeps two runs from both announcing
// the same lost subscription.
func (c *conn) recheck() {
	c.checkMu.Lock()
	defer c.checkMu.Unlock()
	if c.ctx.Err() != nil {
		return
	}
	if acc := c.h.access; acc != nil {
		if err := acc.ActorLive(c.ctx, c.actor); err != nil {
			// A passing failure (database busy) is no verdict: the
			// subscriptions are still checked one by one below.
			if e := service.AsError(err); e.Code == service.CodeUnauthorized {
				c.revoke(e)
				return
			}
		}
	}
	c.reauthorize()
}

// revoke ends a socket whose credential died: every subscription gets
// session/closed, then the socket closes with CloseRevoked once those
// frames are written.
func (c *conn) revoke(e *service.Error) {
	c.mu.Lock()
	subs := make([]*subscription, 0, len(c.subs))
	for _, s := range c.subs {
		subs = append(subs, s)
	}
	c.mu.Unlock()
	for _, s := range subs {
		if c.drop(s) {
			c.send(mustJSON(Push{Ch: ChClosed, Session: s.id, Reason: string(e.Code), Error: e}))
		}
	}
	c.h.log.Info("websocket closed: credentials revoked", "user", c.actor.UserID, "via", c.actor.Via)
	c.closeAfterQueued(CloseRevoked, ReasonRevoked)
}

// closeNote is the item that closes the socket after the frames queued
// before it are written.
type closeNote struct {
	code   websocket.StatusCode
	reason string
}

// closeAfterQueued closes the socket with code once the frames queued so
// far are written (close drops them).
func (c *conn) closeAfterQueued(code websocket.StatusCode, reason string) {
	if c.sock == nil {
		c.close(code, reason)
		return
	}
	c.offer(item{seq: -1, end: &closeNote{code: code, reason: reason}})
}
