package models

import (
	"context"
	"time"

	"harness/internal/auth"
)

func (l LoginSession) record() auth.LoginRecord {
	return auth.LoginRecord{
		ID: l.ID, UserID: l.UserID, CSRFToken: l.CSRFToken, IP: l.IP, UserAgent: l.UserAgent,
		CreatedAt: l.CreatedAt.UTC(), LastSeenAt: l.LastSeenAt.UTC(), ExpiresAt: l.ExpiresAt.UTC(),
	}
}

// InsertLogin stores a login session.
func (s *AuthStore) InsertLogin(ctx context.Context, l auth.LoginRecord) error {
	row := LoginSession{
		ID: l.ID, UserID: l.UserID, CSRFToken: l.CSRFToken, IP: l.IP, UserAgent: l.UserAgent,
		CreatedAt: utc(l.CreatedAt), LastSeenAt: utc(l.LastSeenAt), ExpiresAt: utc(l.ExpiresAt),
	}
	if err := s.db.W.WithContext(ctx).Create(&row).Error; err != nil {
		return authErr("insert login session", err)
	}
	return nil
}

// LoginByID loads a login session by the hash of its cookie.
func (s *AuthStore) LoginByID(ctx context.Context, id string) (auth.LoginRecord, error) {
	var l LoginSession
	if err := s.db.R.WithContext(ctx).Where("id = ?", id).Take(&l).Error; err != nil {
		return auth.LoginRecord{}, authErr("login session", err)
	}
	return l.record(), nil
}

// TouchLogin slides a login session's idle deadline.
func (s *AuthStore) TouchLogin(ctx context.Context, id string, lastSeen, expires time.Time) error {
	res := s.db.W.WithContext(ctx).Model(&LoginSession{}).Where("id = ?", id).
		Updates(map[string]any{"last_seen_at": utc(lastSeen), "expires_at": utc(expires)})
	return affected("touch login session", res)
}

// DeleteLogin ends one login session.
func (s *AuthStore) DeleteLogin(ctx context.Context, id string) error {
	return affected("delete login session", s.db.W.WithContext(ctx).Where("id = ?", id).Delete(&LoginSession{}))
}

// DeleteUserLogins ends every login session of a user.
func (s *AuthStore) DeleteUserLogins(ctx context.Context, userID string) error {
	if err := s.db.W.WithContext(ctx).Where("user_id = ?", userID).Delete(&LoginSession{}).Error; err != nil {
		return authErr("delete login sessions", err)
	}
	return nil
}

// DeleteExpiredLogins removes login sessions whose deadline has passed.
func (s *AuthStore) DeleteExpiredLogins(ctx context.Context, now time.Time) (int64, error) {
	res := s.db.W.WithContext(ctx).Where("expires_at <= ?", utc(now)).Delete(&LoginSession{})
	if res.Error != nil {
		return 0, authErr("delete expired login sessions", res.Error)
	}
	return res.RowsAffected, nil
}
