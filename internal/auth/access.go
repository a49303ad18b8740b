package auth

import (
	"context"
	"fmt"
	"sync"
)

// AccessChange tells that someone may have lost access: a credential died
// or grants shrank. Each set field names whom it concerns; a listener (the
// WebSocket hub) re-checks the open sockets that match any of them, so a
// revocation takes effect on live subscriptions at once instead of at the
// next keepalive. It carries no verdict: the listener asks Authorize and
// ActorLive again, so a notice that raced with a re-grant does no harm.
type AccessChange struct {
	// UserID: this account's credentials or grants changed (disabled,
	// deleted, password changed, demoted, removed from a session).
	UserID string
	// CredentialID: this login session (logout) or API token (revoked)
	// ended; it matches Actor.CredentialID.
	CredentialID string
	// ShareLinkID: this share link was revoked.
	ShareLinkID string
	// Remote: the change was made by another process (a replica on the
	// same database) and reached this one through PublishRemote; listeners
	// that pass changes on to other processes skip it.
	Remote bool
}

// notices fans AccessChanges out to listeners.
type notices struct {
	mu   sync.RWMutex
	next int
	fns  map[int]func(AccessChange)
}

// SubscribeAccess calls fn after every change that may take access away,
// synchronously and after the change is stored; fn must not block. cancel
// stops the calls. Changes made by another process (the CLI) are not
// reported: sockets see those at their next keepalive.
func (s *Service) SubscribeAccess(fn func(AccessChange)) (cancel func()) {
	n := &s.notices
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.fns == nil {
		n.fns = map[int]func(AccessChange){}
	}
	n.next++
	id := n.next
	n.fns[id] = fn
	return func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		delete(n.fns, id)
	}
}

// PublishRemote reports a change another process made (and stored) to
// this process's listeners, marked Remote.
func (s *Service) PublishRemote(c AccessChange) {
	c.Remote = true
	s.notify(context.Background(), c)
}

// notify reports c to every listener; a panicking listener is logged and
// does not stop the others (nor the change, which is already stored).
func (s *Service) notify(ctx context.Context, c AccessChange) {
	n := &s.notices
	n.mu.RLock()
	defer n.mu.RUnlock()
	for _, fn := range n.fns {
		func() {
			defer func() {
				if r := recover(); r != nil {
					s.log.ErrorContext(ctx, "access listener panicked", "panic", fmt.Sprint(r))
				}
			}()
			fn(c)
		}()
	}
}

// ActorLive reports whether the credential a was resolved from still
// stands, whatever session it may read: ErrUnauthenticated when the login
// session ended or expired, the token was revoked, the account was
// disabled or deleted, or the share link was revoked or expired. A socket
// whose actor is no longer live is closed rather than merely losing its
// subscriptions: every later command would be refused anyway.
func (s *Service) ActorLive(ctx context.Context, a *Actor) error {
	if a == nil {
		return ErrUnauthenticated
	}
	if a.Via == ViaShare {
		l, err := s.store.ShareLinkByID(ctx, a.ShareLinkID)
		if isNotFound(err) {
			return ErrUnauthenticated
		}
		if err != nil {
			return fmt.Errorf("check share link: %w", err)
		}
		if !linkLive(l, s.now()) {
			return ErrUnauthenticated
		}
		return nil
	}
	if a.UserID == "" {
		return ErrUnauthenticated
	}
	if err := s.credentialLive(ctx, a); err != nil {
		return err
	}
	u, err := s.store.UserByID(ctx, a.UserID)
	if isNotFound(err) || err == nil && u.Disabled {
		return ErrUnauthenticated
	}
	if err != nil {
		return fmt.Errorf("check account: %w", err)
	}
	return nil
}
