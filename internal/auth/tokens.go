package auth

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"
)

const maxTokenName = 128

// CreateToken makes an API token for userName and returns its plaintext,
// "hrn_" + 32 random bytes in base64url. Only its SHA-256 is stored: the
// plaintext cannot be shown again.
func (s *Service) CreateToken(ctx context.Context, userName, tokenName string) (string, error) {
	tokenName = strings.TrimSpace(tokenName)
	if len(tokenName) > maxTokenName {
		return "", invalid("a token name has at most %d bytes", maxTokenName)
	}
	u, err := s.userByName(ctx, userName)
	if err != nil {
		return "", err
	}
	plain := TokenPrefix + newSecret()
	rec := TokenRecord{
		Token: Token{ID: uuid.NewString(), UserID: u.ID, Name: tokenName, CreatedAt: s.now()},
		Hash:  hashSecret(plain),
	}
	if err := s.store.InsertToken(ctx, rec); err != nil {
		return "", fmt.Errorf("create token for %s: %w", u.Name, err)
	}
	s.log.InfoContext(ctx, "api token created", "user", u.Name, "token_id", rec.ID)
	return plain, nil
}

// RevokeToken revokes one of userName's tokens by id.
func (s *Service) RevokeToken(ctx context.Context, userName, tokenID string) error {
	u, err := s.userByName(ctx, userName)
	if err != nil {
		return err
	}
	if err := s.store.RevokeToken(ctx, u.ID, tokenID, s.now()); err != nil {
		return fmt.Errorf("revoke token %s of %s: %w", tokenID, u.Name, err)
	}
	s.notify(ctx, AccessChange{CredentialID: tokenID})
	s.log.InfoContext(ctx, "api token revoked", "user", u.Name, "token_id", tokenID)
	return nil
}

// ListTokens lists userName's tokens, revoked ones included.
func (s *Service) ListTokens(ctx context.Context, userName string) ([]Token, error) {
	u, err := s.userByName(ctx, userName)
	if err != nil {
		return nil, err
	}
	ts, err := s.store.ListTokens(ctx, u.ID)
	if err != nil {
		return nil, fmt.Errorf("list tokens of %s: %w", u.Name, err)
	}
	return ts, nil
}

// TokenActor resolves a bearer token. Malformed, unknown, revoked, or
// belonging to a disabled user → ErrUnauthenticated.
func (s *Service) TokenActor(ctx context.Context, bearer string) (*Actor, error) {
	secret, ok := strings.CutPrefix(bearer, TokenPrefix)
	if !ok || !wellFormed(secret) {
		return nil, ErrUnauthenticated
	}
	hash := hashSecret(bearer)
	t, err := s.store.TokenByHash(ctx, hash)
	if isNotFound(err) {
		return nil, ErrUnauthenticated
	}
	if err != nil {
		return nil, fmt.Errorf("load token: %w", err)
	}
	// The lookup was by hash; compare again in constant time so a store
	// with a case-folding or prefix-matching index cannot widen the match.
	if !equal(t.Hash, hash) || t.RevokedAt != nil {
		return nil, ErrUnauthenticated
	}
	u, err := s.store.UserByID(ctx, t.UserID)
	if isNotFound(err) || err == nil && u.Disabled {
		return nil, ErrUnauthenticated
	}
	if err != nil {
		return nil, fmt.Errorf("load user: %w", err)
	}
	now := s.now()
	if t.LastUsedAt == nil || now.Sub(*t.LastUsedAt) >= s.touchEvery() {
		if err := s.store.TouchToken(ctx, t.ID, now); err != nil {
			s.log.WarnContext(ctx, "note token use", "err", err)
		}
	}
	a := userActor(u.User, ViaToken)
	a.CredentialID = t.ID
	return a, nil
}
