package auth_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"harness/internal/auth"
	"harness/internal/auth/authtest"
	"harness/internal/models"
)

func TestBootstrapFromPassword(t *testing.T) {
	t.Parallel()
	authtest.ForEachDB(t, func(t *testing.T, db *models.DB) {
		svc := authtest.NewService(t, db, nil, nil)
		ctx := t.Context()
		if err := svc.CheckExposure(ctx, false); !errors.Is(err, auth.ErrExposed) {
			t.Fatalf("exposed with no users = %v, want ErrExposed", err)
		}
		if err := svc.CheckExposure(ctx, true); err != nil {
			t.Fatalf("loopback with no users = %v", err)
		}
		if _, err := svc.Bootstrap(ctx, "short"); !errors.Is(err, auth.ErrInvalidInput) {
			t.Fatalf("too short admin password = %v", err)
		}
		path, err := svc.Bootstrap(ctx, "admin-password")
		if err != nil || path != "" {
			t.Fatalf("Bootstrap = %q, %v", path, err)
		}
		u, err := svc.GetUser(ctx, "admin")
		if err != nil || u.Role != auth.RoleAdmin || !u.HasPassword {
			t.Fatalf("admin = %+v, %v", u, err)
		}
		if _, _, err := svc.Login(ctx, "admin", "admin-password", "127.0.0.1", "ua"); err != nil {
			t.Fatalf("admin login = %v", err)
		}
		if err := svc.CheckExposure(ctx, false); err != nil {
			t.Fatalf("exposed with an admin = %v", err)
		}
		// A second start with users present changes nothing.
		if path, err := svc.Bootstrap(ctx, "other-password"); err != nil || path != "" {
			t.Fatalf("second Bootstrap = %q, %v", path, err)
		}
		if _, _, err := svc.Login(ctx, "admin", "admin-password", "127.0.0.1", "ua"); err != nil {
			t.Fatalf("admin password changed by a second bootstrap: %v", err)
		}
	})
}

func TestBootstrapSetupLink(t *testing.T) {
	t.Parallel()
	authtest.ForEachDB(t, func(t *testing.T, db *models.DB) {
		svc := authtest.NewService(t, db, nil, nil)
		ctx := t.Context()
		old, err := svc.Bootstrap(ctx, "")
		if err != nil || !strings.HasPrefix(old, "/setup/") {
			t.Fatalf("Bootstrap = %q, %v", old, err)
		}
		// Every start replaces the link.
		path, err := svc.Bootstrap(ctx, "")
		if err != nil || path == old {
			t.Fatalf("second Bootstrap = %q, %v", path, err)
		}
		token := strings.TrimPrefix(path, "/setup/")
		oldToken := strings.TrimPrefix(old, "/setup/")
		for tok, wantOK := range map[string]bool{token: true, oldToken: false, "junk": false, "": false} {
			if ok, err := svc.SetupValid(ctx, tok); err != nil || ok != wantOK {
				t.Errorf("SetupValid(%.8s) = %v, %v; want %v", tok, ok, err, wantOK)
			}
		}
		if err := svc.CheckExposure(ctx, false); !errors.Is(err, auth.ErrExposed) {
			t.Fatalf("exposed before setup = %v", err)
		}
		if _, _, err := svc.CompleteSetup(ctx, oldToken, "root", "root-password", "127.0.0.1", "ua"); !errors.Is(err, auth.ErrNotFound) {
			t.Fatalf("setup with a replaced token = %v", err)
		}
		if _, _, err := svc.CompleteSetup(ctx, token, "root", "short", "127.0.0.1", "ua"); !errors.Is(err, auth.ErrInvalidInput) {
			t.Fatalf("setup with a short password = %v", err)
		}
		cookie, info, err := svc.CompleteSetup(ctx, token, "Root", "root-password", "127.0.0.1", "ua")
		if err != nil || info.User.Name != "root" || info.User.Role != auth.RoleAdmin {
			t.Fatalf("CompleteSetup = %+v, %v", info, err)
		}
		if a, _, err := svc.Session(ctx, cookie); err != nil || !a.IsAdmin() {
			t.Fatalf("setup logs the admin in: %+v, %v", a, err)
		}
		// One time only.
		if _, _, err := svc.CompleteSetup(ctx, token, "eve", "eve-password", "127.0.0.1", "ua"); !errors.Is(err, auth.ErrNotFound) {
			t.Fatalf("second use = %v, want ErrNotFound", err)
		}
		if ok, _ := svc.SetupValid(ctx, token); ok {
			t.Fatal("setup token still valid after use")
		}
		if err := svc.CheckExposure(ctx, false); err != nil {
			t.Fatalf("exposed after setup = %v", err)
		}
		if path, err := svc.Bootstrap(ctx, ""); err != nil || path != "" {
			t.Fatalf("Bootstrap with users = %q, %v", path, err)
		}
	})
}

func TestExposureNeedsAUserWhoCanLogIn(t *testing.T) {
	t.Parallel()
	svc := authtest.NewService(t, authtest.OpenSQLite(t), nil, nil)
	ctx := t.Context()
	authtest.MustUser(t, svc, "nopass", "", true)
	if err := svc.CheckExposure(ctx, false); !errors.Is(err, auth.ErrExposed) {
		t.Fatalf("only a password-less user = %v, want ErrExposed", err)
	}
	if err := svc.SetPassword(ctx, "nopass", "now-a-password"); err != nil {
		t.Fatal(err)
	}
	if err := svc.CheckExposure(ctx, false); err != nil {
		t.Fatalf("user with password = %v", err)
	}
}

// TestSecretsNeverLogged drives every operation that handles a password,
// token, cookie or link with debug logging on, then searches the log.
func TestSecretsNeverLogged(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	db := authtest.OpenSQLite(t)
	svc := authtest.NewService(t, db, nil, log)
	ctx := t.Context()

	secrets := []string{"first-admin-pw", "alice-password", "new-alice-pw", "typed-into-name-field"}
	if _, err := svc.Bootstrap(ctx, "first-admin-pw"); err != nil {
		t.Fatal(err)
	}
	alice := authtest.MustUser(t, svc, "alice", "alice-password", false)
	_, _, _ = svc.Login(ctx, "alice", "wrong-password-1", "127.0.0.1", "ua")
	_, _, _ = svc.Login(ctx, "typed-into-name-field", "x", "127.0.0.1", "ua")
	cookie, info, err := svc.Login(ctx, "alice", "alice-password", "127.0.0.1", "ua")
	if err != nil {
		t.Fatal(err)
	}
	_, _, _ = svc.Session(ctx, cookie)
	tok, err := svc.CreateToken(ctx, "alice", "t")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = svc.TokenActor(ctx, tok)
	sid := authtest.CreateSession(t, db, alice.ID)
	share, _, err := svc.CreateShareLink(ctx, sid, alice.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = svc.ShareActor(ctx, share)
	if err := svc.SetPassword(ctx, "alice", "new-alice-pw"); err != nil {
		t.Fatal(err)
	}
	_ = svc.Logout(ctx, cookie)
	secrets = append(secrets, cookie, info.CSRFToken, tok, strings.TrimPrefix(tok, "hrn_"), share)

	out := buf.String()
	if !strings.Contains(out, "login failed") {
		t.Fatalf("log does not record the failed login:\n%s", out)
	}
	for _, s := range secrets {
		if strings.Contains(out, s) {
			t.Errorf("log contains secret %q:\n%s", s, out)
		}
	}
}
