package ws

import (
	"context"
	"slices"
	"sync"

	"harness/internal/auth"
	"harness/internal/service"
)

// changeQueue coalesces session changes for the sidebars and sends them
// from one worker, off the goroutines that reported them.
type changeQueue struct {
	h       *Hub
	mu      sync.Mutex
	pending map[string]*changeBucket
	wake    chan struct{}
}

type changeBucket struct {
	updated bool
	others  []service.Change // deleted and revoked, in order
}

func newChangeQueue(h *Hub) *changeQueue {
	return &changeQueue{h: h, pending: map[string]*changeBucket{}, wake: make(chan struct{}, 1)}
}

// add records a change; it never blocks.
func (q *changeQueue) add(c service.Change) {
	q.mu.Lock()
	b := q.pending[c.Session]
	if b == nil {
		b = &changeBucket{}
		q.pending[c.Session] = b
	}
	if c.Kind == service.ChangeUpdated {
		b.updated = true
	} else {
		b.others = append(b.others, c)
	}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *changeQueue) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-q.wake:
		}
		q.mu.Lock()
		batch := q.pending
		q.pending = map[string]*changeBucket{}
		q.mu.Unlock()
		for id, b := range batch {
			q.deliver(ctx, id, b)
		}
	}
}

// deliver sends one session's changes to the user connections concerned:
// an update to every user who may read the session (Authorize per user),
// deletions and revocations to the users named (and admins, for
// deletions).
func (q *changeQueue) deliver(ctx context.Context, id string, b *changeBucket) {
	users := q.h.userConns()
	if len(users) == 0 {
		return
	}
	deleted := slices.ContainsFunc(b.others, func(c service.Change) bool { return c.Kind == service.ChangeDeleted })
	if b.updated && !deleted {
		// Only the owner, members and admins can see it: ask Authorize
		// (through Row) for those who are connected, not for everyone.
		audience, err := q.h.svc.Audience(ctx, id)
		if err != nil {
			audience = nil // gone meanwhile: nobody to tell
		}
		for uid, conns := range users {
			if !conns[0].actor.IsAdmin() && !slices.Contains(audience, uid) {
				continue
			}
			row, err := q.h.svc.Row(ctx, conns[0].actor, id)
			if err != nil {
				continue // not visible to this user, or gone
			}
			if row.Kind == service.KindSubagent {
				return // shown in its parent's transcript, not in sidebars
			}
			frame := mustJSON(changedPush{Ch: ChSessionsChanged, Session: row})
			for _, c := range conns {
				c.send(frame)
			}
		}
	}
	gone := mustJSON(changedPush{Ch: ChSessionsChanged, Session: deletedRow{ID: id, Deleted: true}})
	told := map[string]bool{}
	for _, ch := range b.others {
		for uid, conns := range users {
			admin := ch.Kind == service.ChangeDeleted && conns[0].actor.IsAdmin()
			if told[uid] || !admin && !slices.Contains(ch.Users, uid) {
				continue
			}
			if ch.Kind == service.ChangeRevoked {
				// Coalesced changes may have given access back since.
				if _, err := q.h.svc.Authorize(ctx, conns[0].actor, id, auth.ActionRead); err == nil {
					continue
				}
			}
			told[uid] = true
			for _, c := range conns {
				c.send(gone)
			}
		}
	}
}

// userConns groups the connections of real users by user id.
func (h *Hub) userConns() map[string][]*conn {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string][]*conn{}
	for c := range h.conns {
		if c.actor.IsUser() {
			out[c.actor.UserID] = append(out[c.actor.UserID], c)
		}
	}
	return out
}
