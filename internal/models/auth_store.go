package models

import (
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"harness/internal/auth"
)

// AuthStore implements auth.Store over DB: users, login sessions, API
// tokens, members, share links and the setup token. It needs no batched
// writer, so the CLI can use it on its own.
type AuthStore struct {
	db *DB
}

var _ auth.Store = (*AuthStore)(nil)

// NewAuthStore builds the auth store on db.
func NewAuthStore(db *DB) *AuthStore { return &AuthStore{db: db} }

// authErr maps gorm's errors to the ones auth.Store promises.
func authErr(what string, err error) error {
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return fmt.Errorf("%s: %w", what, auth.ErrNotFound)
	case errors.Is(err, gorm.ErrDuplicatedKey):
		return fmt.Errorf("%s: %w", what, auth.ErrExists)
	default:
		return fmt.Errorf("%s: %w", what, err)
	}
}

// affected turns a zero-row update or delete into auth.ErrNotFound.
func affected(what string, res *gorm.DB) error {
	if res.Error != nil {
		return authErr(what, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("%s: %w", what, auth.ErrNotFound)
	}
	return nil
}

// utc normalises a timestamp to what the store keeps: UTC microseconds.
func utc(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := utc(*t)
	return &u
}
