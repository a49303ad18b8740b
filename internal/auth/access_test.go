package auth_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"harness/internal/auth"
	"harness/internal/auth/authtest"
)

// Every change that can take access away is announced, after it is
// stored, naming whom it concerns; and ActorLive then refuses the dead
// credential.
func TestAccessNotices(t *testing.T) {
	t.Parallel()
	type fixture struct {
		svc    *auth.Service
		bob    auth.User
		cookie string      // bob's login cookie
		login  *auth.Actor // resolved from cookie
		token  *auth.Actor // bob's API token
		share  *auth.Actor // a share link of bob's session
		sessID string
	}
	tests := []struct {
		name   string
		change func(t *testing.T, f *fixture) error
		want   func(f *fixture) auth.AccessChange
		dead   func(f *fixture) []*auth.Actor // not live afterwards
		alive  func(f *fixture) []*auth.Actor // still live
	}{
		{"logout",
			func(t *testing.T, f *fixture) error { return f.svc.Logout(t.Context(), f.cookie) },
			func(f *fixture) auth.AccessChange { return auth.AccessChange{CredentialID: f.login.CredentialID} },
			func(f *fixture) []*auth.Actor { return []*auth.Actor{f.login} },
			func(f *fixture) []*auth.Actor { return []*auth.Actor{f.token, f.share} }},
		{"token revoked",
			func(t *testing.T, f *fixture) error {
				return f.svc.RevokeToken(t.Context(), "bob", f.token.CredentialID)
			},
			func(f *fixture) auth.AccessChange { return auth.AccessChange{CredentialID: f.token.CredentialID} },
			func(f *fixture) []*auth.Actor { return []*auth.Actor{f.token} },
			func(f *fixture) []*auth.Actor { return []*auth.Actor{f.login, f.share} }},
		{"password changed",
			func(t *testing.T, f *fixture) error { return f.svc.SetPassword(t.Context(), "bob", "another-password") },
			func(f *fixture) auth.AccessChange { return auth.AccessChange{UserID: f.bob.ID} },
			func(f *fixture) []*auth.Actor { return []*auth.Actor{f.login} },
			func(f *fixture) []*auth.Actor { return []*auth.Actor{f.token, f.share} }}, // tokens are separate credentials
		{"disabled",
			func(t *testing.T, f *fixture) error { return f.svc.SetDisabled(t.Context(), "bob", true) },
			func(f *fixture) auth.AccessChange { return auth.AccessChange{UserID: f.bob.ID} },
			func(f *fixture) []*auth.Actor { return []*auth.Actor{f.login, f.token} },
			func(f *fixture) []*auth.Actor { return []*auth.Actor{f.share} }},
		{"deleted",
			func(t *testing.T, f *fixture) error { return f.svc.DeleteUser(t.Context(), "bob") },
			func(f *fixture) auth.AccessChange { return auth.AccessChange{UserID: f.bob.ID} },
			func(f *fixture) []*auth.Actor { return []*auth.Actor{f.login, f.token} },
			func(f *fixture) []*auth.Actor { return []*auth.Actor{f.share} }},
		{"demoted",
			func(t *testing.T, f *fixture) error { return f.svc.SetRole(t.Context(), "bob", auth.RoleUser) },
			func(f *fixture) auth.AccessChange { return auth.AccessChange{UserID: f.bob.ID} },
			func(*fixture) []*auth.Actor { return nil },
			func(f *fixture) []*auth.Actor { return []*auth.Actor{f.login, f.token, f.share} }},
		{"member removed",
			func(t *testing.T, f *fixture) error {
				if err := f.svc.AddMember(t.Context(), f.sessID, "carol", auth.SessionRoleViewer); err != nil {
					return err
				}
				return f.svc.RemoveMember(t.Context(), f.sessID, "carol")
			},
			func(f *fixture) auth.AccessChange {
				u, _ := f.svc.GetUser(t.Context(), "carol")
				return auth.AccessChange{UserID: u.ID}
			},
			func(*fixture) []*auth.Actor { return nil },
			func(f *fixture) []*auth.Actor { return []*auth.Actor{f.login, f.token, f.share} }},
		{"share link revoked",
			func(t *testing.T, f *fixture) error {
				return f.svc.RevokeShareLink(t.Context(), f.sessID, f.share.ShareLinkID)
			},
			func(f *fixture) auth.AccessChange { return auth.AccessChange{ShareLinkID: f.share.ShareLinkID} },
			func(f *fixture) []*auth.Actor { return []*auth.Actor{f.share} },
			func(f *fixture) []*auth.Actor { return []*auth.Actor{f.login, f.token} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			db := authtest.OpenSQLite(t)
			f := &fixture{svc: authtest.NewService(t, db, authtest.NewClock(), nil)}
			ctx := t.Context()
			authtest.MustUser(t, f.svc, "admin", "admin-password", true)
			f.bob = authtest.MustUser(t, f.svc, "bob", "bob-password", true)
			authtest.MustUser(t, f.svc, "carol", "carol-password", false)
			var err error
			if f.cookie, _, err = f.svc.Login(ctx, "bob", "bob-password", "192.0.2.1", "ua"); err != nil {
				t.Fatal(err)
			}
			if f.login, _, err = f.svc.Session(ctx, f.cookie); err != nil {
				t.Fatal(err)
			}
			tok, err := f.svc.CreateToken(ctx, "bob", "t")
			if err != nil {
				t.Fatal(err)
			}
			if f.token, err = f.svc.TokenActor(ctx, tok); err != nil {
				t.Fatal(err)
			}
			f.sessID = authtest.CreateSession(t, db, f.bob.ID)
			exp := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
			share, _, err := f.svc.CreateShareLink(ctx, f.sessID, f.bob.ID, &exp)
			if err != nil {
				t.Fatal(err)
			}
			if f.share, err = f.svc.ShareActor(ctx, share); err != nil {
				t.Fatal(err)
			}

			var mu sync.Mutex
			var got []auth.AccessChange
			cancel := f.svc.SubscribeAccess(func(c auth.AccessChange) {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, c)
			})
			defer cancel()
			if err := tt.change(t, f); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			notices := got
			mu.Unlock()
			if want := tt.want(f); len(notices) != 1 || notices[0] != want {
				t.Fatalf("notices %+v, want [%+v]", notices, want)
			}
			for _, a := range tt.dead(f) {
				if err := f.svc.ActorLive(ctx, a); !errors.Is(err, auth.ErrUnauthenticated) {
					t.Errorf("ActorLive(%s) = %v, want ErrUnauthenticated", a.Via, err)
				}
			}
			for _, a := range tt.alive(f) {
				if err := f.svc.ActorLive(ctx, a); err != nil {
					t.Errorf("ActorLive(%s) = %v, want live", a.Via, err)
				}
			}
		})
	}
}
