package auth_test

import (
	"errors"
	"strings"
	"testing"

	"harness/internal/auth"
	"harness/internal/auth/authtest"
	"harness/internal/models"
)

func TestCreateUserValidation(t *testing.T) {
	t.Parallel()
	authtest.ForEachDB(t, func(t *testing.T, db *models.DB) {
		svc := authtest.NewService(t, db, nil, nil)
		ctx := t.Context()
		tests := []struct {
			name, user, pw string
			want           error
		}{
			{"ok", "alice", "correct horse", nil},
			{"no password yet", "bob", "", nil},
			{"upper case is folded", "Carol", "correct horse", nil},
			{"taken", "alice", "correct horse", auth.ErrExists},
			{"taken, other case", "ALICE", "correct horse", auth.ErrExists},
			{"empty name", "", "correct horse", auth.ErrInvalidInput},
			{"space in name", "a b", "correct horse", auth.ErrInvalidInput},
			{"leading dot", ".x", "correct horse", auth.ErrInvalidInput},
			{"too long name", strings.Repeat("a", 65), "correct horse", auth.ErrInvalidInput},
			{"short password", "dave", "short", auth.ErrInvalidInput},
			{"long password", "dave", strings.Repeat("p", 73), auth.ErrInvalidInput},
		}
		for _, tt := range tests {
			_, err := svc.CreateUser(ctx, tt.user, tt.pw, false)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("%s: CreateUser(%q) = %v, want %v", tt.name, tt.user, err, tt.want)
			}
		}
		u, err := svc.GetUser(ctx, "CAROL")
		if err != nil || u.Name != "carol" || u.Role != auth.RoleUser || !u.HasPassword {
			t.Fatalf("GetUser(CAROL) = %+v, %v", u, err)
		}
		b, err := svc.GetUser(ctx, "bob")
		if err != nil || b.HasPassword {
			t.Fatalf("bob = %+v, %v; want no password", b, err)
		}
		if _, err := svc.GetUser(ctx, "nobody"); !errors.Is(err, auth.ErrNotFound) {
			t.Fatalf("GetUser(nobody) = %v, want ErrNotFound", err)
		}
		users, err := svc.ListUsers(ctx)
		if err != nil || len(users) != 3 || users[0].Name != "alice" || users[2].Name != "carol" {
			t.Fatalf("ListUsers = %+v, %v", users, err)
		}
	})
}

func TestUserLifecycle(t *testing.T) {
	t.Parallel()
	authtest.ForEachDB(t, func(t *testing.T, db *models.DB) {
		svc := authtest.NewService(t, db, nil, nil)
		ctx := t.Context()
		authtest.MustUser(t, svc, "root", "root-password", true)
		authtest.MustUser(t, svc, "alice", "alice-password", false)

		cookie, _, err := svc.Login(ctx, "alice", "alice-password", "127.0.0.1", "test")
		if err != nil {
			t.Fatal(err)
		}
		// A password change ends the user's login sessions.
		if err := svc.SetPassword(ctx, "alice", "new-alice-password"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := svc.Session(ctx, cookie); !errors.Is(err, auth.ErrUnauthenticated) {
			t.Fatalf("session after password change = %v, want ErrUnauthenticated", err)
		}
		if _, _, err := svc.Login(ctx, "alice", "alice-password", "127.0.0.2", "test"); !errors.Is(err, auth.ErrInvalidCredentials) {
			t.Fatalf("old password = %v, want ErrInvalidCredentials", err)
		}
		cookie, _, err = svc.Login(ctx, "alice", "new-alice-password", "127.0.0.1", "test")
		if err != nil {
			t.Fatal(err)
		}
		// Disabling ends sessions and refuses logins; enabling allows again.
		if err := svc.SetDisabled(ctx, "alice", true); err != nil {
			t.Fatal(err)
		}
		if _, _, err := svc.Session(ctx, cookie); !errors.Is(err, auth.ErrUnauthenticated) {
			t.Fatalf("session after disable = %v", err)
		}
		if _, _, err := svc.Login(ctx, "alice", "new-alice-password", "127.0.0.3", "test"); !errors.Is(err, auth.ErrInvalidCredentials) {
			t.Fatalf("disabled login = %v, want ErrInvalidCredentials", err)
		}
		if err := svc.SetDisabled(ctx, "alice", false); err != nil {
			t.Fatal(err)
		}
		if _, _, err := svc.Login(ctx, "alice", "new-alice-password", "127.0.0.4", "test"); err != nil {
			t.Fatalf("enabled login = %v", err)
		}

		// The last admin who can log in cannot be disabled, demoted or deleted.
		for name, op := range map[string]func() error{
			"disable": func() error { return svc.SetDisabled(ctx, "root", true) },
			"demote":  func() error { return svc.SetRole(ctx, "root", auth.RoleUser) },
			"delete":  func() error { return svc.DeleteUser(ctx, "root") },
		} {
			if err := op(); !errors.Is(err, auth.ErrLastAdmin) {
				t.Errorf("%s last admin = %v, want ErrLastAdmin", name, err)
			}
		}
		if err := svc.SetRole(ctx, "alice", auth.RoleAdmin); err != nil {
			t.Fatal(err)
		}
		if err := svc.SetRole(ctx, "root", auth.RoleUser); err != nil {
			t.Fatalf("demote with another admin = %v", err)
		}
		if err := svc.SetRole(ctx, "root", "superuser"); !errors.Is(err, auth.ErrInvalidInput) {
			t.Fatalf("bad role = %v", err)
		}

		// Deleting removes the user, their tokens and memberships.
		tok, err := svc.CreateToken(ctx, "root", "ci")
		if err != nil {
			t.Fatal(err)
		}
		sid := authtest.CreateSession(t, db, mustID(t, svc, "alice"))
		if err := svc.AddMember(ctx, sid, "root", auth.SessionRoleViewer); err != nil {
			t.Fatal(err)
		}
		if err := svc.DeleteUser(ctx, "root"); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.TokenActor(ctx, tok); !errors.Is(err, auth.ErrUnauthenticated) {
			t.Fatalf("token of deleted user = %v", err)
		}
		if ms, err := svc.ListMembers(ctx, sid); err != nil || len(ms) != 0 {
			t.Fatalf("members after delete = %+v, %v", ms, err)
		}
		if err := svc.DeleteUser(ctx, "root"); !errors.Is(err, auth.ErrNotFound) {
			t.Fatalf("second delete = %v, want ErrNotFound", err)
		}
	})
}

func mustID(t *testing.T, svc *auth.Service, name string) string {
	t.Helper()
	u, err := svc.GetUser(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	return u.ID
}
