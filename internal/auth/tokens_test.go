package auth_test

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"harness/internal/auth"
	"harness/internal/auth/authtest"
	"harness/internal/models"
)

func TestTokens(t *testing.T) {
	t.Parallel()
	authtest.ForEachDB(t, func(t *testing.T, db *models.DB) {
		clock := authtest.NewClock()
		svc := authtest.NewService(t, db, clock, nil)
		ctx := t.Context()
		alice := authtest.MustUser(t, svc, "alice", "alice-password", false)
		authtest.MustUser(t, svc, "bob", "bob-password", false)

		plain, err := svc.CreateToken(ctx, "alice", "laptop")
		if err != nil {
			t.Fatal(err)
		}
		raw, ok := strings.CutPrefix(plain, "hrn_")
		if b, err := base64.RawURLEncoding.DecodeString(raw); !ok || err != nil || len(b) != 32 {
			t.Fatalf("token %q: want hrn_ + base64url(32 bytes)", plain)
		}
		clock.Advance(time.Second)
		other, err := svc.CreateToken(ctx, "alice", "ci")
		if err != nil || other == plain {
			t.Fatalf("second token = %q, %v", other, err)
		}
		// Only the hash is stored.
		var rows []models.APIToken
		db.R.Find(&rows)
		for _, r := range rows {
			if strings.Contains(r.Hash, raw) || r.Hash == plain || len(r.Hash) != 64 {
				t.Fatalf("stored token row %+v holds the plaintext", r)
			}
		}

		a, err := svc.TokenActor(ctx, plain)
		if err != nil || a.UserID != alice.ID || a.Via != auth.ViaToken || !a.IsUser() {
			t.Fatalf("TokenActor = %+v, %v", a, err)
		}
		ts, err := svc.ListTokens(ctx, "alice")
		if err != nil || len(ts) != 2 || ts[0].Name != "laptop" || ts[0].LastUsedAt == nil || ts[1].LastUsedAt != nil {
			t.Fatalf("ListTokens = %+v, %v", ts, err)
		}

		bad := []string{"", "hrn_", "Bearer " + plain, plain + "A", "hrn_" + strings.Repeat("A", 43), strings.TrimPrefix(plain, "hrn_"), strings.ToUpper(plain)}
		for _, b := range bad {
			if _, err := svc.TokenActor(ctx, b); !errors.Is(err, auth.ErrUnauthenticated) {
				t.Errorf("TokenActor(%q) = %v, want ErrUnauthenticated", b, err)
			}
		}

		// Revocation is scoped to the owner and takes effect at once.
		if err := svc.RevokeToken(ctx, "bob", ts[0].ID); !errors.Is(err, auth.ErrNotFound) {
			t.Fatalf("bob revokes alice's token = %v, want ErrNotFound", err)
		}
		if err := svc.RevokeToken(ctx, "alice", ts[0].ID); err != nil {
			t.Fatal(err)
		}
		if err := svc.RevokeToken(ctx, "alice", ts[0].ID); !errors.Is(err, auth.ErrNotFound) {
			t.Fatalf("second revoke = %v, want ErrNotFound", err)
		}
		if _, err := svc.TokenActor(ctx, plain); !errors.Is(err, auth.ErrUnauthenticated) {
			t.Fatalf("revoked token = %v", err)
		}
		if _, err := svc.TokenActor(ctx, other); err != nil {
			t.Fatalf("the other token = %v", err)
		}

		// A disabled user's tokens are refused while disabled.
		authtest.MustUser(t, svc, "root", "root-password", true)
		if err := svc.SetDisabled(ctx, "alice", true); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.TokenActor(ctx, other); !errors.Is(err, auth.ErrUnauthenticated) {
			t.Fatalf("disabled user's token = %v", err)
		}
		if err := svc.SetDisabled(ctx, "alice", false); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Hour)
		if _, err := svc.TokenActor(ctx, other); err != nil {
			t.Fatalf("re-enabled user's token = %v", err)
		}
		if _, err := svc.CreateToken(ctx, "nobody", "x"); !errors.Is(err, auth.ErrNotFound) {
			t.Fatalf("token for unknown user = %v", err)
		}
	})
}
