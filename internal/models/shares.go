package models

import (
	"context"
	"time"

	"harness/internal/auth"
)

func (l ShareLink) link() auth.ShareLink {
	return auth.ShareLink{
		ID: l.ID, SessionID: l.SessionID, CreatedBy: l.CreatedBy, CreatedAt: l.CreatedAt.UTC(),
		ExpiresAt: utcPtr(l.ExpiresAt), RevokedAt: utcPtr(l.RevokedAt),
	}
}

// InsertShareLink stores a share link's token hash and metadata.
func (s *AuthStore) InsertShareLink(ctx context.Context, l auth.ShareLinkRecord) error {
	row := ShareLink{
		ID: l.ID, SessionID: l.SessionID, TokenHash: l.TokenHash, CreatedBy: l.CreatedBy,
		CreatedAt: utc(l.CreatedAt), ExpiresAt: utcPtr(l.ExpiresAt),
	}
	if err := s.db.W.WithContext(ctx).Create(&row).Error; err != nil {
		return authErr("insert share link", err)
	}
	return nil
}

// ShareLinkByHash loads a link by the SHA-256 of its token.
func (s *AuthStore) ShareLinkByHash(ctx context.Context, hash string) (auth.ShareLink, error) {
	var l ShareLink
	if err := s.db.R.WithContext(ctx).Where("token_hash = ?", hash).Take(&l).Error; err != nil {
		return auth.ShareLink{}, authErr("share link", err)
	}
	return l.link(), nil
}

// ShareLinkByID loads a link by id.
func (s *AuthStore) ShareLinkByID(ctx context.Context, id string) (auth.ShareLink, error) {
	var l ShareLink
	if err := s.db.R.WithContext(ctx).Where("id = ?", id).Take(&l).Error; err != nil {
		return auth.ShareLink{}, authErr("share link "+id, err)
	}
	return l.link(), nil
}

// RevokeShareLink marks a live link of sessionID revoked.
func (s *AuthStore) RevokeShareLink(ctx context.Context, sessionID, id string, at time.Time) error {
	res := s.db.W.WithContext(ctx).Model(&ShareLink{}).
		Where("id = ? AND session_id = ? AND revoked_at IS NULL", id, sessionID).
		Update("revoked_at", utc(at))
	return affected("revoke share link "+id, res)
}

// ListShareLinks lists a session's links, oldest first.
func (s *AuthStore) ListShareLinks(ctx context.Context, sessionID string) ([]auth.ShareLink, error) {
	var ls []ShareLink
	if err := s.db.R.WithContext(ctx).Where("session_id = ?", sessionID).Order("created_at, id").Find(&ls).Error; err != nil {
		return nil, authErr("list share links", err)
	}
	out := make([]auth.ShareLink, len(ls))
	for i, l := range ls {
		out[i] = l.link()
	}
	return out, nil
}
