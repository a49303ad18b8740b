package models

import (
	"context"

	"gorm.io/gorm"

	"harness/internal/auth"
)

func userFromRecord(u auth.UserRecord) User {
	return User{
		ID: u.ID, Name: u.Name, DisplayName: u.DisplayName, PasswordHash: u.PasswordHash,
		Role: string(u.Role), Disabled: u.Disabled, CreatedAt: utc(u.CreatedAt),
	}
}

func (u User) record() auth.UserRecord {
	return auth.UserRecord{
		User: auth.User{
			ID: u.ID, Name: u.Name, DisplayName: u.DisplayName, Role: auth.Role(u.Role),
			Disabled: u.Disabled, HasPassword: u.PasswordHash != "", CreatedAt: u.CreatedAt.UTC(),
		},
		PasswordHash: u.PasswordHash,
	}
}

// CountUsers counts all users, those who can log in, and admins who can.
func (s *AuthStore) CountUsers(ctx context.Context) (auth.UserCounts, error) {
	var c auth.UserCounts
	q := func() *gorm.DB { return s.db.R.WithContext(ctx).Model(&User{}) }
	if err := q().Count(&c.Total).Error; err != nil {
		return c, authErr("count users", err)
	}
	canLogin := func() *gorm.DB { return q().Where("password_hash <> ? AND disabled = ?", "", false) }
	if err := canLogin().Count(&c.WithPassword).Error; err != nil {
		return c, authErr("count users", err)
	}
	if err := canLogin().Where("role = ?", string(auth.RoleAdmin)).Count(&c.ActiveAdmins).Error; err != nil {
		return c, authErr("count admins", err)
	}
	return c, nil
}

// InsertUser adds a user; a taken name is auth.ErrExists.
func (s *AuthStore) InsertUser(ctx context.Context, u auth.UserRecord) error {
	row := userFromRecord(u)
	if err := s.db.W.WithContext(ctx).Create(&row).Error; err != nil {
		return authErr("insert user "+u.Name, err)
	}
	return nil
}

// UserByName looks a user up by (normalised) name.
func (s *AuthStore) UserByName(ctx context.Context, name string) (auth.UserRecord, error) {
	var u User
	if err := s.db.R.WithContext(ctx).Where("name = ?", name).Take(&u).Error; err != nil {
		return auth.UserRecord{}, authErr("user "+name, err)
	}
	return u.record(), nil
}

// UserByID looks a user up by id.
func (s *AuthStore) UserByID(ctx context.Context, id string) (auth.UserRecord, error) {
	var u User
	if err := s.db.R.WithContext(ctx).Where("id = ?", id).Take(&u).Error; err != nil {
		return auth.UserRecord{}, authErr("user "+id, err)
	}
	return u.record(), nil
}

// ListUsers returns every user ordered by name.
func (s *AuthStore) ListUsers(ctx context.Context) ([]auth.UserRecord, error) {
	var us []User
	if err := s.db.R.WithContext(ctx).Order("name").Find(&us).Error; err != nil {
		return nil, authErr("list users", err)
	}
	out := make([]auth.UserRecord, len(us))
	for i, u := range us {
		out[i] = u.record()
	}
	return out, nil
}

// UpdateUser writes a user's display name, role, disabled flag and hash.
func (s *AuthStore) UpdateUser(ctx context.Context, u auth.UserRecord) error {
	res := s.db.W.WithContext(ctx).Model(&User{}).Where("id = ?", u.ID).
		Select("display_name", "password_hash", "role", "disabled", "updated_at").
		Updates(&User{
			DisplayName: u.DisplayName, PasswordHash: u.PasswordHash, Role: string(u.Role),
			Disabled: u.Disabled, UpdatedAt: now(),
		})
	return affected("update user "+u.Name, res)
}

// DeleteUser removes a user with their logins, tokens and memberships in
// one transaction. Sessions they own are kept.
func (s *AuthStore) DeleteUser(ctx context.Context, id string) error {
	return s.db.W.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		for _, m := range []any{&LoginSession{}, &APIToken{}, &Member{}} {
			if err := tx.Where("user_id = ?", id).Delete(m).Error; err != nil {
				return authErr("delete user "+id, err)
			}
		}
		return affected("delete user "+id, tx.Where("id = ?", id).Delete(&User{}))
	})
}
