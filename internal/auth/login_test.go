package auth_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"harness/internal/auth"
	"harness/internal/auth/authtest"
	"harness/internal/models"
)

func TestLoginSameAnswerForEveryFailure(t *testing.T) {
	t.Parallel()
	db := authtest.OpenSQLite(t)
	svc := authtest.NewService(t, db, nil, nil)
	ctx := t.Context()
	authtest.MustUser(t, svc, "alice", "alice-password", false)
	authtest.MustUser(t, svc, "nopass", "", false)
	authtest.MustUser(t, svc, "off", "off-password", false)
	if err := svc.SetDisabled(ctx, "off", true); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, user, pw string }{
		{"unknown user", "mallory", "alice-password"},
		{"wrong password", "alice", "wrong-password"},
		{"no password set", "nopass", ""},
		{"disabled", "off", "off-password"},
		{"invalid name", "../etc", "x"},
		{"empty", "", ""},
	}
	for i, tt := range tests {
		_, _, err := svc.Login(ctx, tt.user, tt.pw, fmt.Sprintf("192.0.2.%d", i), "ua")
		if !errors.Is(err, auth.ErrInvalidCredentials) || err.Error() != "invalid name or password" {
			t.Errorf("%s: err = %v, want exactly ErrInvalidCredentials", tt.name, err)
		}
	}
	cookie, info, err := svc.Login(ctx, "ALICE", "alice-password", "192.0.2.99", "ua")
	if err != nil || cookie == "" || info.User.Name != "alice" || info.CSRFToken == "" {
		t.Fatalf("login = %q %+v %v", cookie, info, err)
	}
	a, csrf, err := svc.Session(ctx, cookie)
	if err != nil || a.Name != "alice" || a.Via != auth.ViaCookie || csrf != info.CSRFToken {
		t.Fatalf("Session = %+v %q %v", a, csrf, err)
	}
	// The database holds the cookie's hash, never the cookie.
	var n int64
	db.R.Model(&models.LoginSession{}).Where("id = ?", cookie).Count(&n)
	if n != 0 {
		t.Fatal("login session stored under the plaintext cookie")
	}
	if err := svc.Logout(ctx, cookie); err != nil {
		t.Fatal(err)
	}
	if _, _, err := svc.Session(ctx, cookie); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("Session after logout = %v", err)
	}
	for _, bad := range []string{"", "x", cookie + "x", "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"} {
		if _, _, err := svc.Session(ctx, bad); !errors.Is(err, auth.ErrUnauthenticated) {
			t.Errorf("Session(%q) = %v", bad, err)
		}
	}
}

func TestLoginRateLimit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// attempt i's user and address: failures share one key, vary the other.
		user, addr func(i int) string
	}{
		{"per address", func(i int) string { return fmt.Sprintf("user%d", i) }, func(int) string { return "198.51.100.7" }},
		{"per user", func(int) string { return "alice" }, func(i int) string { return fmt.Sprintf("198.51.100.%d", i) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clock := authtest.NewClock()
			svc := authtest.NewService(t, authtest.OpenSQLite(t), clock, nil)
			ctx := t.Context()
			authtest.MustUser(t, svc, "alice", "alice-password", false)
			for i := range 5 {
				_, _, err := svc.Login(ctx, tt.user(i), "wrong-password", tt.addr(i), "ua")
				if !errors.Is(err, auth.ErrInvalidCredentials) {
					t.Fatalf("attempt %d = %v, want ErrInvalidCredentials", i+1, err)
				}
				clock.Advance(5 * time.Second)
			}
			// The 6th attempt is refused, even with the right password.
			_, _, err := svc.Login(ctx, "alice", "alice-password", tt.addr(5), "ua")
			var rl *auth.RateLimitError
			if !errors.As(err, &rl) {
				t.Fatalf("6th attempt = %v, want RateLimitError", err)
			}
			// The first failure was 25s ago: it leaves the window in 35s.
			if rl.RetryAfter != 35*time.Second {
				t.Fatalf("RetryAfter = %v, want 35s", rl.RetryAfter)
			}
			clock.Advance(rl.RetryAfter)
			if _, _, err := svc.Login(ctx, "alice", "alice-password", tt.addr(5), "ua"); err != nil {
				t.Fatalf("after the window: %v", err)
			}
		})
	}
}

func TestLoginSessionExpiry(t *testing.T) {
	t.Parallel()
	authtest.ForEachDB(t, func(t *testing.T, db *models.DB) {
		clock := authtest.NewClock()
		svc := authtest.NewService(t, db, clock, nil)
		ctx := t.Context()
		authtest.MustUser(t, svc, "alice", "alice-password", false)
		login := func() string {
			c, _, err := svc.Login(ctx, "alice", "alice-password", "127.0.0.1", "ua")
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		valid := func(c string) bool {
			_, _, err := svc.Session(ctx, c)
			if err != nil && !errors.Is(err, auth.ErrUnauthenticated) {
				t.Fatal(err)
			}
			return err == nil
		}

		// Idle: unused for 24h ends it.
		idle := login()
		clock.Advance(24*time.Hour - time.Second)
		if !valid(idle) {
			t.Fatal("idle session ended early")
		}
		clock.Advance(24*time.Hour - time.Second)
		if !valid(idle) {
			t.Fatal("use did not slide the idle deadline")
		}
		clock.Advance(24 * time.Hour)
		if valid(idle) {
			t.Fatal("session unused for 24h still valid")
		}

		// Absolute: 30 days after login, however busy.
		busy := login()
		for range 29 {
			clock.Advance(24*time.Hour - time.Minute)
			if !valid(busy) {
				t.Fatal("busy session ended before 30 days")
			}
		}
		clock.Advance(24 * time.Hour)
		if valid(busy) {
			t.Fatal("session older than 30 days still valid")
		}

		// Sweep removes what has expired and keeps live sessions.
		fresh := login()
		login() // a second one for the sweep
		clock.Advance(25 * time.Hour)
		fresh2 := login()
		n, err := svc.SweepExpired(ctx)
		if err != nil || n != 2 {
			t.Fatalf("SweepExpired = %d, %v; want 2", n, err)
		}
		if valid(fresh) || !valid(fresh2) {
			t.Fatal("sweep kept an expired or dropped a live session")
		}
	})
}
