package auth

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// LoginSessionInfo describes a new login session. The cookie value itself is
// returned separately by Login and never stored.
type LoginSessionInfo struct {
	User      User      `json:"user"`
	CSRFToken string    `json:"-"`
	CreatedAt time.Time `json:"created_at"`
	// ExpiresAt is the absolute deadline: the cookie's lifetime. The idle
	// deadline slides and is enforced by Session.
	ExpiresAt time.Time `json:"expires_at"`
}

// maxUserAgent is the stored user agent's length (the column's size).
const maxUserAgent = 255

// Login checks a name and password and opens a login session. Every
// failure is ErrInvalidCredentials, after the same bcrypt work whether or
// not the user exists, or a *RateLimitError when the client address, or
// this name from this address, has used up its failed attempts in the
// window. Failures are never counted against a name alone: a stranger
// failing passwords for a name must not lock its owner out.
func (s *Service) Login(ctx context.Context, name, password, clientAddr, userAgent string) (string, LoginSessionInfo, error) {
	now := s.now()
	name = NormalizeName(name)
	// The name is bounded before it becomes a key: it is the client's input.
	pair := truncateKey(name) + "\x00" + clientAddr
	if wait := max(s.pairs.check(now, pair), s.addrs.check(now, clientAddr)); wait > 0 {
		s.log.WarnContext(ctx, "login rate limited", "addr", clientAddr, "retry_after", wait)
		return "", LoginSessionInfo{}, &RateLimitError{RetryAfter: wait}
	}
	var rec UserRecord
	var err error
	if validName(name) == nil {
		rec, err = s.store.UserByName(ctx, name)
		if err != nil && !isNotFound(err) {
			return "", LoginSessionInfo{}, fmt.Errorf("login: %w", err)
		}
	}
	if !s.checkPassword(rec, password) {
		s.pairs.fail(now, pair)
		s.addrs.fail(now, clientAddr)
		// Log the name only when it is an account: a password typed into
		// the name field must not reach the log.
		if rec.ID != "" {
			s.log.WarnContext(ctx, "login failed", "user", rec.Name, "addr", clientAddr)
		} else {
			s.log.WarnContext(ctx, "login failed: unknown user", "addr", clientAddr)
		}
		return "", LoginSessionInfo{}, ErrInvalidCredentials
	}
	// Only the pair is forgiven: a guesser who owns one account must not
	// clear its address's count by signing in to it.
	s.pairs.reset(pair)
	cookie, info, err := s.startLogin(ctx, rec, clientAddr, userAgent)
	if err != nil {
		return "", LoginSessionInfo{}, err
	}
	s.log.InfoContext(ctx, "login", "user", rec.Name, "addr", clientAddr)
	return cookie, info, nil
}

// truncateKey bounds a client-chosen part of a limiter key.
func truncateKey(s string) string {
	if len(s) > maxNameLen {
		return s[:maxNameLen]
	}
	return s
}

// checkPassword runs bcrypt exactly once whatever the record holds, so
// unknown, disabled and password-less accounts answer as slowly as a wrong
// password.
func (s *Service) checkPassword(rec UserRecord, password string) bool {
	hash := []byte(rec.PasswordHash)
	usable := rec.ID != "" && !rec.Disabled && len(hash) > 0
	if !usable {
		hash = s.dummyHash()
	}
	err := bcrypt.CompareHashAndPassword(hash, []byte(password))
	return usable && err == nil
}

// startLogin stores a new login session for rec and returns its cookie.
func (s *Service) startLogin(ctx context.Context, rec UserRecord, clientAddr, userAgent string) (string, LoginSessionInfo, error) {
	now := s.now()
	cookie := newSecret()
	if len(userAgent) > maxUserAgent {
		userAgent = userAgent[:maxUserAgent]
	}
	l := LoginRecord{
		ID: hashSecret(cookie), UserID: rec.ID, CSRFToken: newSecret(),
		IP: clientAddr, UserAgent: userAgent,
		CreatedAt: now, LastSeenAt: now,
	}
	l.ExpiresAt = s.deadline(l)
	if err := s.store.InsertLogin(ctx, l); err != nil {
		return "", LoginSessionInfo{}, fmt.Errorf("store login session: %w", err)
	}
	return cookie, LoginSessionInfo{
		User: rec.User, CSRFToken: l.CSRFToken, CreatedAt: now, ExpiresAt: now.Add(s.abs),
	}, nil
}

// deadline is when l expires: the earlier of idle and absolute expiry.
func (s *Service) deadline(l LoginRecord) time.Time {
	idle, abs := l.LastSeenAt.Add(s.idle), l.CreatedAt.Add(s.abs)
	if idle.Before(abs) {
		return idle
	}
	return abs
}

// touchEvery limits the sliding-expiry write to one per login per period.
func (s *Service) touchEvery() time.Duration { return min(time.Minute, s.idle/10) }

// Session resolves a login cookie to its actor and CSRF token, sliding the
// idle deadline. Unknown, expired or disabled → ErrUnauthenticated.
func (s *Service) Session(ctx context.Context, cookieValue string) (*Actor, string, error) {
	if !wellFormed(cookieValue) {
		return nil, "", ErrUnauthenticated
	}
	id := hashSecret(cookieValue)
	l, err := s.store.LoginByID(ctx, id)
	if isNotFound(err) {
		return nil, "", ErrUnauthenticated
	}
	if err != nil {
		return nil, "", fmt.Errorf("load login session: %w", err)
	}
	now := s.now()
	if !now.Before(s.deadline(l)) {
		s.dropLogin(ctx, id)
		return nil, "", fmt.Errorf("login session expired: %w", ErrUnauthenticated)
	}
	u, err := s.store.UserByID(ctx, l.UserID)
	if isNotFound(err) || err == nil && u.Disabled {
		s.dropLogin(ctx, id)
		return nil, "", ErrUnauthenticated
	}
	if err != nil {
		return nil, "", fmt.Errorf("load user: %w", err)
	}
	s.slide(ctx, l)
	a := userActor(u.User, ViaCookie)
	a.CredentialID = id
	return a, l.CSRFToken, nil
}

// slide moves a live login's idle deadline to now + idle, at most once
// per touchEvery.
func (s *Service) slide(ctx context.Context, l LoginRecord) {
	now := s.now()
	if now.Sub(l.LastSeenAt) < s.touchEvery() {
		return
	}
	l.LastSeenAt = now
	if err := s.store.TouchLogin(ctx, l.ID, now, s.deadline(l)); err != nil {
		// The session is valid; a failed slide only shortens it.
		s.log.WarnContext(ctx, "extend login session", "err", err)
	}
}

// Logout ends the login session of cookieValue; unknown cookies are fine.
func (s *Service) Logout(ctx context.Context, cookieValue string) error {
	if !wellFormed(cookieValue) {
		return nil
	}
	id := hashSecret(cookieValue)
	if err := s.store.DeleteLogin(ctx, id); err != nil && !isNotFound(err) {
		return fmt.Errorf("logout: %w", err)
	}
	s.notify(ctx, AccessChange{CredentialID: id})
	return nil
}

// SweepExpired deletes expired login sessions; main may call it
// periodically (expired sessions are refused either way).
func (s *Service) SweepExpired(ctx context.Context) (int64, error) {
	n, err := s.store.DeleteExpiredLogins(ctx, s.now())
	if err != nil {
		return 0, fmt.Errorf("sweep login sessions: %w", err)
	}
	return n, nil
}

func (s *Service) dropLogin(ctx context.Context, id string) {
	if err := s.store.DeleteLogin(ctx, id); err != nil && !errors.Is(err, ErrNotFound) {
		s.log.WarnContext(ctx, "delete login session", "err", err)
	}
}

func userActor(u User, via Via) *Actor {
	return &Actor{UserID: u.ID, Name: u.Name, DisplayName: u.DisplayName, Role: u.Role, Via: via}
}
