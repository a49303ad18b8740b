package models

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"harness/internal/auth"
)

func TestAuthStoreRoundTrip(t *testing.T) {
	t.Parallel()
	forEachDB(t, func(t *testing.T, db *DB) {
		ctx := t.Context()
		st := NewAuthStore(db)
		at := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
		u := auth.UserRecord{
			User:         auth.User{ID: uuid.NewString(), Name: "alice", DisplayName: "Alice", Role: auth.RoleAdmin, CreatedAt: at},
			PasswordHash: "$2a$04$hash",
		}
		if err := st.InsertUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		dup := u
		dup.ID = uuid.NewString()
		if err := st.InsertUser(ctx, dup); !errors.Is(err, auth.ErrExists) {
			t.Fatalf("duplicate name = %v, want auth.ErrExists", err)
		}
		got, err := st.UserByName(ctx, "alice")
		if err != nil || got.ID != u.ID || !got.HasPassword || got.Role != auth.RoleAdmin || !got.CreatedAt.Equal(at.Truncate(time.Microsecond)) {
			t.Fatalf("UserByName = %+v, %v", got, err)
		}
		if _, err := st.UserByID(ctx, "nope"); !errors.Is(err, auth.ErrNotFound) {
			t.Fatalf("UserByID(nope) = %v", err)
		}
		got.Disabled, got.PasswordHash, got.Role = true, "", auth.RoleUser
		if err := st.UpdateUser(ctx, got); err != nil {
			t.Fatal(err)
		}
		if again, _ := st.UserByID(ctx, u.ID); !again.Disabled || again.HasPassword || again.Role != auth.RoleUser {
			t.Fatalf("UpdateUser did not write zero values: %+v", again)
		}
		c, err := st.CountUsers(ctx)
		if err != nil || c != (auth.UserCounts{Total: 1}) {
			t.Fatalf("CountUsers = %+v, %v", c, err)
		}

		// SessionAccess: one query for owner, membership and the user.
		sess := Session{ID: uuid.NewString(), OwnerID: "someone", Head: -1}
		if err := db.W.Create(&sess).Error; err != nil {
			t.Fatal(err)
		}
		if err := st.PutMember(ctx, sess.ID, u.ID, auth.SessionRoleViewer, at); err != nil {
			t.Fatal(err)
		}
		if err := st.PutMember(ctx, sess.ID, u.ID, auth.SessionRoleCollaborator, at); err != nil {
			t.Fatal(err)
		}
		acc, err := st.SessionAccess(ctx, sess.ID, u.ID)
		want := auth.Access{OwnerID: "someone", MemberRole: auth.SessionRoleCollaborator, UserFound: true, UserRole: auth.RoleUser, UserDisabled: true}
		if err != nil || acc != want {
			t.Fatalf("SessionAccess = %+v, %v; want %+v", acc, err, want)
		}
		if acc, err := st.SessionAccess(ctx, sess.ID, ""); err != nil || acc != (auth.Access{OwnerID: "someone"}) {
			t.Fatalf("SessionAccess(no user) = %+v, %v", acc, err)
		}
		if _, err := st.SessionAccess(ctx, "nope", u.ID); !errors.Is(err, auth.ErrNotFound) {
			t.Fatalf("SessionAccess(unknown session) = %v", err)
		}

		// Login sessions: expiry sweep compares timestamps in SQL.
		for i, exp := range []time.Time{at.Add(-time.Microsecond), at, at.Add(time.Microsecond)} {
			l := auth.LoginRecord{ID: uuid.NewString(), UserID: u.ID, CSRFToken: "c", CreatedAt: at, LastSeenAt: at, ExpiresAt: exp}
			if err := st.InsertLogin(ctx, l); err != nil {
				t.Fatalf("login %d: %v", i, err)
			}
		}
		if n, err := st.DeleteExpiredLogins(ctx, at.Truncate(time.Microsecond)); err != nil || n != 2 {
			t.Fatalf("DeleteExpiredLogins = %d, %v; want 2", n, err)
		}
		if err := st.DeleteUser(ctx, u.ID); err != nil {
			t.Fatal(err)
		}
		var left int64
		db.R.Model(&LoginSession{}).Count(&left)
		if left != 0 {
			t.Fatalf("%d login sessions outlived their user", left)
		}
		if ms, _ := st.ListMembers(ctx, sess.ID); len(ms) != 0 {
			t.Fatalf("members outlived their user: %+v", ms)
		}
	})
}
