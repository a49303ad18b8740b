package auth_test

import (
	"errors"
	"fmt"
	"slices"
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

// Failed logins are limited per (name, address) and per address, never per
// name alone: a stranger failing passwords for a name does not lock its
// owner out, and one address still cannot guess quickly.
func TestLoginRateLimit(t *testing.T) {
	t.Parallel()
	const (
		a = "198.51.100.7" // the guesser
		b = "203.0.113.9"  // alice at home
	)
	type attempt struct {
		user, addr string
		right      bool          // alice's and bob's right password, else a wrong one
		want       string        // "ok", "bad" or "limited"
		retry      time.Duration // RetryAfter of "limited"
		advance    time.Duration // the clock moves on afterwards
	}
	bad := func(user, addr string, n int, advance time.Duration) []attempt {
		out := make([]attempt, n)
		for i := range out {
			out[i] = attempt{user: user, addr: addr, want: "bad", advance: advance}
		}
		return out
	}
	join := func(parts ...[]attempt) []attempt { return slices.Concat(parts...) }
	strangers := func(n int) []attempt { // n names, one failure each, from a
		out := make([]attempt, n)
		for i := range out {
			out[i] = attempt{user: fmt.Sprintf("user%d", i), addr: a, want: "bad"}
		}
		return out
	}
	tests := []struct {
		name     string
		attempts []attempt
	}{
		{"a name's failures from one address lock only that pair", join(
			bad("alice", a, 5, 5*time.Second),
			[]attempt{
				// The first failure was 25 s ago: it leaves the window in 35 s.
				{user: "alice", addr: a, right: true, want: "limited", retry: 35 * time.Second},
				{user: "alice", addr: b, right: true, want: "ok"},
				{user: "bob", addr: a, right: true, want: "ok"},
				{user: "alice", addr: a, right: true, want: "limited", retry: 35 * time.Second, advance: 35 * time.Second},
				{user: "alice", addr: a, right: true, want: "ok"},
			},
		)},
		{"a stranger repeating every minute never locks the owner out", join(
			bad("alice", a, 5, 0), []attempt{{user: "alice", addr: b, right: true, want: "ok", advance: time.Minute}},
			bad("alice", a, 5, 0), []attempt{{user: "alice", addr: b, right: true, want: "ok", advance: time.Minute}},
			bad("alice", a, 5, 0), []attempt{{user: "alice", addr: b, right: true, want: "ok"}},
		)},
		{"one address is limited across names", join(
			strangers(20),
			[]attempt{
				{user: "alice", addr: a, right: true, want: "limited", retry: time.Minute},
				{user: "nobody", addr: a, want: "limited", retry: time.Minute},
				{user: "alice", addr: b, right: true, want: "ok"},
			},
		)},
		{"a success forgives the pair, not the address", join(
			bad("alice", a, 4, 0),
			[]attempt{{user: "alice", addr: a, right: true, want: "ok"}},
			bad("alice", a, 4, 0), // the pair counts from zero again
			strangers(12),         // the address has 4 + 4 + 12 = 20
			[]attempt{{user: "alice", addr: a, right: true, want: "limited", retry: time.Minute}},
		)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clock := authtest.NewClock()
			svc := authtest.NewService(t, authtest.OpenSQLite(t), clock, nil)
			ctx := t.Context()
			authtest.MustUser(t, svc, "alice", "alice-password", false)
			authtest.MustUser(t, svc, "bob", "bob-password", false)
			for i, at := range tt.attempts {
				pw := "wrong-password"
				if at.right {
					pw = at.user + "-password"
				}
				_, _, err := svc.Login(ctx, at.user, pw, at.addr, "ua")
				var rl *auth.RateLimitError
				switch {
				case at.want == "ok" && err != nil,
					at.want == "bad" && !errors.Is(err, auth.ErrInvalidCredentials),
					at.want == "limited" && !errors.As(err, &rl):
					t.Fatalf("attempt %d (%s from %s) = %v, want %s", i+1, at.user, at.addr, err, at.want)
				case at.want == "limited" && rl.RetryAfter != at.retry:
					t.Fatalf("attempt %d: RetryAfter = %v, want %v", i+1, rl.RetryAfter, at.retry)
				}
				clock.Advance(at.advance)
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
