package auth_test

import (
	"encoding/base64"
	"errors"
	"testing"
	"time"

	"harness/internal/auth"
	"harness/internal/auth/authtest"
	"harness/internal/models"
)

func TestShareLinks(t *testing.T) {
	t.Parallel()
	authtest.ForEachDB(t, func(t *testing.T, db *models.DB) {
		clock := authtest.NewClock()
		svc := authtest.NewService(t, db, clock, nil)
		ctx := t.Context()
		owner := authtest.MustUser(t, svc, "owner", "owner-password", false)
		sid := authtest.CreateSession(t, db, owner.ID)
		other := authtest.CreateSession(t, db, owner.ID)

		tok, id, err := svc.CreateShareLink(ctx, sid, owner.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		if b, err := base64.RawURLEncoding.DecodeString(tok); err != nil || len(b)*8 < 128 {
			t.Fatalf("share token %q has < 128 random bits", tok)
		}
		a, err := svc.ShareActor(ctx, tok)
		if err != nil || a.Via != auth.ViaShare || a.ShareSessionID != sid || a.ShareLinkID != id || a.IsUser() {
			t.Fatalf("ShareActor = %+v, %v", a, err)
		}
		if role, err := svc.Authorize(ctx, a, sid, auth.ActionRead); err != nil || role != auth.SessionRoleViewer {
			t.Fatalf("share reads its session: %q, %v", role, err)
		}

		clock.Advance(time.Second)
		in := clock.Now().Add(time.Hour)
		expTok, expID, err := svc.CreateShareLink(ctx, sid, owner.ID, &in)
		if err != nil {
			t.Fatal(err)
		}
		exp, err := svc.ShareActor(ctx, expTok)
		if err != nil {
			t.Fatalf("unexpired link = %v", err)
		}
		past := clock.Now().Add(-time.Second)
		if _, _, err := svc.CreateShareLink(ctx, sid, owner.ID, &past); !errors.Is(err, auth.ErrInvalidInput) {
			t.Fatalf("link expiring in the past = %v", err)
		}
		if _, _, err := svc.CreateShareLink(ctx, "no-such-session", owner.ID, nil); !errors.Is(err, auth.ErrNotFound) {
			t.Fatalf("link to unknown session = %v", err)
		}

		links, err := svc.ListShareLinks(ctx, sid)
		if err != nil || len(links) != 2 || links[1].ID != expID || links[1].ExpiresAt == nil || !links[1].ExpiresAt.Equal(in) {
			t.Fatalf("ListShareLinks = %+v, %v", links, err)
		}

		// Expiry: the link and an actor resolved before it stop working.
		clock.Advance(time.Hour)
		if _, err := svc.ShareActor(ctx, expTok); !errors.Is(err, auth.ErrNotFound) {
			t.Fatalf("expired link = %v, want ErrNotFound", err)
		}
		if _, err := svc.Authorize(ctx, exp, sid, auth.ActionRead); !errors.Is(err, auth.ErrUnauthenticated) {
			t.Fatalf("actor of an expired link = %v", err)
		}

		// Revocation is scoped to the session and immediate.
		if err := svc.RevokeShareLink(ctx, other, id); !errors.Is(err, auth.ErrNotFound) {
			t.Fatalf("revoke through another session = %v, want ErrNotFound", err)
		}
		if err := svc.RevokeShareLink(ctx, sid, id); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.ShareActor(ctx, tok); !errors.Is(err, auth.ErrNotFound) {
			t.Fatalf("revoked link = %v, want ErrNotFound", err)
		}
		if _, err := svc.Authorize(ctx, a, sid, auth.ActionRead); !errors.Is(err, auth.ErrUnauthenticated) {
			t.Fatalf("actor of a revoked link = %v", err)
		}
		for _, bad := range []string{"", "short", tok + "x"} {
			if _, err := svc.ShareActor(ctx, bad); !errors.Is(err, auth.ErrNotFound) {
				t.Errorf("ShareActor(%q) = %v", bad, err)
			}
		}
	})
}
