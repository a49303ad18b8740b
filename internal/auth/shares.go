package auth

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// CreateShareLink makes a read-only live-transcript link for a session and
// returns its token (256 random bits, shown once; only its hash is stored)
// and id. createdBy is the creating user's id; expiresAt nil = no expiry.
// The caller has authorized ActionManage.
func (s *Service) CreateShareLink(ctx context.Context, sessionID, createdBy string, expiresAt *time.Time) (string, string, error) {
	now := s.now()
	if expiresAt != nil && !expiresAt.After(now) {
		return "", "", invalid("a share link must expire in the future")
	}
	if _, err := s.store.SessionAccess(ctx, sessionID, ""); err != nil {
		return "", "", fmt.Errorf("session %s: %w", sessionID, err)
	}
	token := newSecret()
	rec := ShareLinkRecord{
		ShareLink: ShareLink{ID: uuid.NewString(), SessionID: sessionID, CreatedBy: createdBy, CreatedAt: now},
		TokenHash: hashSecret(token),
	}
	if expiresAt != nil {
		e := expiresAt.UTC().Truncate(time.Microsecond)
		rec.ExpiresAt = &e
	}
	if err := s.store.InsertShareLink(ctx, rec); err != nil {
		return "", "", fmt.Errorf("create share link for %s: %w", sessionID, err)
	}
	s.log.InfoContext(ctx, "share link created", "session", sessionID, "link_id", rec.ID)
	return token, rec.ID, nil
}

// RevokeShareLink revokes one of a session's links; viewers using it are
// refused from their next request or command, and listeners of
// SubscribeAccess are told so open sockets lose it at once.
func (s *Service) RevokeShareLink(ctx context.Context, sessionID, linkID string) error {
	if err := s.store.RevokeShareLink(ctx, sessionID, linkID, s.now()); err != nil {
		return fmt.Errorf("revoke share link %s: %w", linkID, err)
	}
	s.notify(ctx, AccessChange{ShareLinkID: linkID})
	s.log.InfoContext(ctx, "share link revoked", "session", sessionID, "link_id", linkID)
	return nil
}

// ListShareLinks lists a session's links, revoked and expired included.
func (s *Service) ListShareLinks(ctx context.Context, sessionID string) ([]ShareLink, error) {
	ls, err := s.store.ListShareLinks(ctx, sessionID)
	if err != nil {
		return nil, fmt.Errorf("list share links of %s: %w", sessionID, err)
	}
	return ls, nil
}

// ShareActor resolves a share token to a read-only actor for its session.
// Malformed, unknown, revoked or expired → ErrNotFound (a link that no
// longer works looks like one that never existed).
func (s *Service) ShareActor(ctx context.Context, token string) (*Actor, error) {
	if !wellFormed(token) {
		return nil, ErrNotFound
	}
	l, err := s.store.ShareLinkByHash(ctx, hashSecret(token))
	if isNotFound(err) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("load share link: %w", err)
	}
	if !linkLive(l, s.now()) {
		return nil, ErrNotFound
	}
	return &Actor{Name: "guest", DisplayName: "Guest", Via: ViaShare, ShareSessionID: l.SessionID, ShareLinkID: l.ID}, nil
}
