package models

import (
	"context"
	"fmt"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"harness/internal/auth"
)

// setupTokenKey is the settings row holding the one-time setup token's hash.
const setupTokenKey = "auth.setup_token_sha256"

// PutSetupToken replaces the setup token's hash.
func (s *AuthStore) PutSetupToken(ctx context.Context, hash string) error {
	row := Setting{Key: setupTokenKey, Value: hash, UpdatedAt: now()}
	err := s.db.W.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "key"}},
		DoUpdates: clause.AssignmentColumns([]string{"value", "updated_at"}),
	}).Create(&row).Error
	if err != nil {
		return authErr("store setup token", err)
	}
	return nil
}

// SetupTokenValid reports whether hash is the stored setup token and no
// user exists.
func (s *AuthStore) SetupTokenValid(ctx context.Context, hash string) (bool, error) {
	var n int64
	err := s.db.R.WithContext(ctx).Model(&Setting{}).
		Where(clause.Eq{Column: clause.Column{Name: "key"}, Value: setupTokenKey}).
		Where("value = ?", hash).Count(&n).Error
	if err != nil {
		return false, authErr("check setup token", err)
	}
	if n == 0 {
		return false, nil
	}
	var users int64
	if err := s.db.R.WithContext(ctx).Model(&User{}).Count(&users).Error; err != nil {
		return false, authErr("count users", err)
	}
	return users == 0, nil
}

// ConsumeSetupToken deletes the matching setup token and inserts the first
// admin in one transaction. Deleting first makes a concurrent second use
// find no row (PostgreSQL waits on the row lock; SQLite has one writer).
func (s *AuthStore) ConsumeSetupToken(ctx context.Context, hash string, admin auth.UserRecord) error {
	return s.db.W.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Where(clause.Eq{Column: clause.Column{Name: "key"}, Value: setupTokenKey}).
			Where("value = ?", hash).Delete(&Setting{})
		if err := affected("setup token", res); err != nil {
			return err
		}
		var users int64
		if err := tx.Model(&User{}).Count(&users).Error; err != nil {
			return authErr("count users", err)
		}
		if users > 0 {
			return fmt.Errorf("setup token: users exist: %w", auth.ErrNotFound)
		}
		row := userFromRecord(admin)
		if err := tx.Create(&row).Error; err != nil {
			return authErr("insert first admin", err)
		}
		return nil
	})
}
