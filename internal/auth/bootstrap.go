package auth

import (
	"context"
	"fmt"

	"github.com/google/uuid"
)

// BootstrapAdmin is the name of the admin Bootstrap creates.
const BootstrapAdmin = "admin"

// SetupPathPrefix starts the one-time setup link.
const SetupPathPrefix = "/setup/"

// Bootstrap runs at start. With users present it does nothing. With none,
// it creates admin "admin" from adminPassword when given, or else stores a
// new one-time setup token and returns "/setup/<token>" for main to log
// (each start replaces the previous token). Call it before CheckExposure.
func (s *Service) Bootstrap(ctx context.Context, adminPassword string) (string, error) {
	// Compute the dummy hash now, so the first login with an unknown name
	// does not take longer than a wrong password.
	s.dummyHash()
	c, err := s.store.CountUsers(ctx)
	if err != nil {
		return "", fmt.Errorf("bootstrap: %w", err)
	}
	if c.Total > 0 {
		return "", nil
	}
	if adminPassword != "" {
		if _, err := s.CreateUser(ctx, BootstrapAdmin, adminPassword, true); err != nil {
			return "", fmt.Errorf("bootstrap admin from HARNESS_ADMIN_PASSWORD: %w", err)
		}
		return "", nil
	}
	token := newSecret()
	if err := s.store.PutSetupToken(ctx, hashSecret(token)); err != nil {
		return "", fmt.Errorf("bootstrap: store setup token: %w", err)
	}
	return SetupPathPrefix + token, nil
}

// NeedsSetup reports whether no account exists yet (a fresh install: the
// setup link in the server's log, or HARNESS_ADMIN_PASSWORD, makes the
// first one).
func (s *Service) NeedsSetup(ctx context.Context) (bool, error) {
	c, err := s.store.CountUsers(ctx)
	if err != nil {
		return false, fmt.Errorf("count users: %w", err)
	}
	return c.Total == 0, nil
}

// SetupValid reports whether token is the live setup token (no user yet).
func (s *Service) SetupValid(ctx context.Context, token string) (bool, error) {
	if !wellFormed(token) {
		return false, nil
	}
	ok, err := s.store.SetupTokenValid(ctx, hashSecret(token))
	if err != nil {
		return false, fmt.Errorf("check setup token: %w", err)
	}
	return ok, nil
}

// CompleteSetup consumes the setup token, creates the first admin and logs
// them in. A used, replaced or wrong token, or an existing user, gives
// ErrNotFound.
func (s *Service) CompleteSetup(ctx context.Context, token, name, password, clientAddr, userAgent string) (string, LoginSessionInfo, error) {
	name = NormalizeName(name)
	if err := validName(name); err != nil {
		return "", LoginSessionInfo{}, err
	}
	hash, err := s.hashPassword(password)
	if err != nil {
		return "", LoginSessionInfo{}, err
	}
	if !wellFormed(token) {
		return "", LoginSessionInfo{}, fmt.Errorf("setup token: %w", ErrNotFound)
	}
	rec := UserRecord{
		User: User{
			ID: uuid.NewString(), Name: name, DisplayName: name, Role: RoleAdmin,
			HasPassword: true, CreatedAt: s.now(),
		},
		PasswordHash: hash,
	}
	if err := s.store.ConsumeSetupToken(ctx, hashSecret(token), rec); err != nil {
		return "", LoginSessionInfo{}, fmt.Errorf("setup: %w", err)
	}
	s.log.InfoContext(ctx, "first admin created by setup link", "user", name, "addr", clientAddr)
	return s.startLogin(ctx, rec, clientAddr, userAgent)
}

// CheckExposure refuses a non-loopback bind unless some enabled user has a
// password: an exposed server must never be open to the network.
func (s *Service) CheckExposure(ctx context.Context, loopback bool) error {
	if loopback {
		return nil
	}
	c, err := s.store.CountUsers(ctx)
	if err != nil {
		return fmt.Errorf("check exposure: %w", err)
	}
	if c.WithPassword == 0 {
		return ErrExposed
	}
	return nil
}
