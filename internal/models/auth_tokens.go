package models

import (
	"context"
	"time"

	"harness/internal/auth"
)

func (t APIToken) token() auth.Token {
	return auth.Token{
		ID: t.ID, UserID: t.UserID, Name: t.Name, CreatedAt: t.CreatedAt.UTC(),
		LastUsedAt: utcPtr(t.LastUsedAt), RevokedAt: utcPtr(t.RevokedAt),
	}
}

// InsertToken stores an API token's hash and metadata.
func (s *AuthStore) InsertToken(ctx context.Context, t auth.TokenRecord) error {
	row := APIToken{ID: t.ID, UserID: t.UserID, Name: t.Name, Hash: t.Hash, CreatedAt: utc(t.CreatedAt)}
	if err := s.db.W.WithContext(ctx).Create(&row).Error; err != nil {
		return authErr("insert api token", err)
	}
	return nil
}

// TokenByHash loads a token by the SHA-256 of its plaintext.
func (s *AuthStore) TokenByHash(ctx context.Context, hash string) (auth.TokenRecord, error) {
	var t APIToken
	if err := s.db.R.WithContext(ctx).Where("hash = ?", hash).Take(&t).Error; err != nil {
		return auth.TokenRecord{}, authErr("api token", err)
	}
	return auth.TokenRecord{Token: t.token(), Hash: t.Hash}, nil
}

// TokenByID loads a token's metadata by id.
func (s *AuthStore) TokenByID(ctx context.Context, id string) (auth.Token, error) {
	var t APIToken
	if err := s.db.R.WithContext(ctx).Where("id = ?", id).Take(&t).Error; err != nil {
		return auth.Token{}, authErr("api token "+id, err)
	}
	return t.token(), nil
}

// ListTokens lists a user's tokens, oldest first.
func (s *AuthStore) ListTokens(ctx context.Context, userID string) ([]auth.Token, error) {
	var ts []APIToken
	if err := s.db.R.WithContext(ctx).Where("user_id = ?", userID).Order("created_at, id").Find(&ts).Error; err != nil {
		return nil, authErr("list api tokens", err)
	}
	out := make([]auth.Token, len(ts))
	for i, t := range ts {
		out[i] = t.token()
	}
	return out, nil
}

// RevokeToken marks a live token of userID revoked.
func (s *AuthStore) RevokeToken(ctx context.Context, userID, id string, at time.Time) error {
	res := s.db.W.WithContext(ctx).Model(&APIToken{}).
		Where("id = ? AND user_id = ? AND revoked_at IS NULL", id, userID).
		Update("revoked_at", utc(at))
	return affected("revoke api token", res)
}

// TouchToken records a token's last use.
func (s *AuthStore) TouchToken(ctx context.Context, id string, at time.Time) error {
	res := s.db.W.WithContext(ctx).Model(&APIToken{}).Where("id = ?", id).Update("last_used_at", utc(at))
	return affected("touch api token", res)
}
