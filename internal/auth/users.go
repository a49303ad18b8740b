package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"golang.org/x/crypto/bcrypt"
)

// Password length bounds. bcrypt reads at most 72 bytes; longer passwords
// are refused rather than silently truncated.
const (
	MinPasswordLen = 8
	MaxPasswordLen = 72
	maxNameLen     = 64
)

// NormalizeName lower-cases and trims a user name; names are
// case-insensitive.
func NormalizeName(name string) string { return strings.ToLower(strings.TrimSpace(name)) }

// validName: 1–64 of [a-z0-9._-], starting with a letter or digit.
func validName(name string) error {
	if name == "" || len(name) > maxNameLen {
		return invalid("a user name has 1 to %d characters", maxNameLen)
	}
	for i, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || i > 0 && (r == '.' || r == '_' || r == '-')
		if !ok {
			return invalid("a user name uses a-z, 0-9, '.', '_' and '-', and starts with a letter or digit")
		}
	}
	return nil
}

func validPassword(pw string) error {
	if len(pw) < MinPasswordLen || len(pw) > MaxPasswordLen {
		return invalid("a password has %d to %d bytes", MinPasswordLen, MaxPasswordLen)
	}
	return nil
}

func (s *Service) hashPassword(pw string) (string, error) {
	if err := validPassword(pw); err != nil {
		return "", err
	}
	h, err := bcrypt.GenerateFromPassword([]byte(pw), s.cost)
	if err != nil {
		return "", fmt.Errorf("hash password: %w", err)
	}
	return string(h), nil
}

// CreateUser adds an account. An empty password creates a user who cannot
// log in until SetPassword.
func (s *Service) CreateUser(ctx context.Context, name, password string, admin bool) (User, error) {
	name = NormalizeName(name)
	if err := validName(name); err != nil {
		return User{}, err
	}
	var hash string
	if password != "" {
		var err error
		if hash, err = s.hashPassword(password); err != nil {
			return User{}, err
		}
	}
	role := RoleUser
	if admin {
		role = RoleAdmin
	}
	rec := UserRecord{
		User: User{
			ID: uuid.NewString(), Name: name, DisplayName: name, Role: role,
			HasPassword: hash != "", CreatedAt: s.now(),
		},
		PasswordHash: hash,
	}
	if err := s.store.InsertUser(ctx, rec); err != nil {
		return User{}, fmt.Errorf("create user %s: %w", name, err)
	}
	s.log.InfoContext(ctx, "user created", "user", name, "role", role)
	return rec.User, nil
}

// GetUser returns the user by name.
func (s *Service) GetUser(ctx context.Context, name string) (User, error) {
	rec, err := s.userByName(ctx, name)
	return rec.User, err
}

// GetUserByID returns the user by id.
func (s *Service) GetUserByID(ctx context.Context, id string) (User, error) {
	rec, err := s.store.UserByID(ctx, id)
	if err != nil {
		return User{}, fmt.Errorf("user %s: %w", id, err)
	}
	return rec.User, nil
}

// ListUsers returns every account, by name.
func (s *Service) ListUsers(ctx context.Context) ([]User, error) {
	recs, err := s.store.ListUsers(ctx)
	if err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	out := make([]User, len(recs))
	for i, r := range recs {
		out[i] = r.User
	}
	return out, nil
}

// SetPassword replaces a user's password and ends their login sessions
// (API tokens stay valid: they are separate credentials).
func (s *Service) SetPassword(ctx context.Context, name, password string) error {
	rec, err := s.userByName(ctx, name)
	if err != nil {
		return err
	}
	if rec.PasswordHash, err = s.hashPassword(password); err != nil {
		return err
	}
	rec.HasPassword = true
	if err := s.store.UpdateUser(ctx, rec); err != nil {
		return fmt.Errorf("set password of %s: %w", rec.Name, err)
	}
	if err := s.store.DeleteUserLogins(ctx, rec.ID); err != nil {
		return fmt.Errorf("end logins of %s: %w", rec.Name, err)
	}
	s.notify(ctx, AccessChange{UserID: rec.ID})
	s.log.InfoContext(ctx, "password changed", "user", rec.Name)
	return nil
}

// SetDisabled disables or enables an account. Disabling ends its login
// sessions; its tokens are refused while it stays disabled.
func (s *Service) SetDisabled(ctx context.Context, name string, disabled bool) error {
	rec, err := s.userByName(ctx, name)
	if err != nil {
		return err
	}
	if disabled {
		if err := s.keepAnAdmin(ctx, rec); err != nil {
			return err
		}
	}
	rec.Disabled = disabled
	if err := s.store.UpdateUser(ctx, rec); err != nil {
		return fmt.Errorf("update %s: %w", rec.Name, err)
	}
	if disabled {
		if err := s.store.DeleteUserLogins(ctx, rec.ID); err != nil {
			return fmt.Errorf("end logins of %s: %w", rec.Name, err)
		}
		s.notify(ctx, AccessChange{UserID: rec.ID})
	}
	s.log.InfoContext(ctx, "user updated", "user", rec.Name, "disabled", disabled)
	return nil
}

// SetRole makes a user an admin or a plain user.
func (s *Service) SetRole(ctx context.Context, name string, role Role) error {
	if role != RoleAdmin && role != RoleUser {
		return invalid("role %q: want admin or user", role)
	}
	rec, err := s.userByName(ctx, name)
	if err != nil {
		return err
	}
	if role != RoleAdmin {
		if err := s.keepAnAdmin(ctx, rec); err != nil {
			return err
		}
	}
	rec.Role = role
	if err := s.store.UpdateUser(ctx, rec); err != nil {
		return fmt.Errorf("update %s: %w", rec.Name, err)
	}
	if role != RoleAdmin {
		// A demoted admin no longer reads other users' sessions.
		s.notify(ctx, AccessChange{UserID: rec.ID})
	}
	s.log.InfoContext(ctx, "user updated", "user", rec.Name, "role", role)
	return nil
}

// DeleteUser removes an account with its logins, tokens and memberships.
// Sessions it owns stay, visible to admins.
func (s *Service) DeleteUser(ctx context.Context, name string) error {
	rec, err := s.userByName(ctx, name)
	if err != nil {
		return err
	}
	if err := s.keepAnAdmin(ctx, rec); err != nil {
		return err
	}
	if err := s.store.DeleteUser(ctx, rec.ID); err != nil {
		return fmt.Errorf("delete user %s: %w", rec.Name, err)
	}
	s.notify(ctx, AccessChange{UserID: rec.ID})
	s.log.InfoContext(ctx, "user deleted", "user", rec.Name)
	return nil
}

// keepAnAdmin refuses to take away the last enabled admin who can log in.
func (s *Service) keepAnAdmin(ctx context.Context, rec UserRecord) error {
	if rec.Role != RoleAdmin || rec.Disabled || rec.PasswordHash == "" {
		return nil
	}
	c, err := s.store.CountUsers(ctx)
	if err != nil {
		return fmt.Errorf("count admins: %w", err)
	}
	if c.ActiveAdmins <= 1 {
		return fmt.Errorf("%s: %w", rec.Name, ErrLastAdmin)
	}
	return nil
}

func (s *Service) userByName(ctx context.Context, name string) (UserRecord, error) {
	name = NormalizeName(name)
	if validName(name) != nil {
		return UserRecord{}, fmt.Errorf("user %q: %w", name, ErrNotFound)
	}
	rec, err := s.store.UserByName(ctx, name)
	if err != nil {
		return UserRecord{}, fmt.Errorf("user %s: %w", name, err)
	}
	return rec, nil
}

// isNotFound reports a store miss.
func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) }
