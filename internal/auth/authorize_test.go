package auth_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"harness/internal/auth"
	"harness/internal/auth/authtest"
	"harness/internal/models"
)

// The role × action matrix, written out: what each session role may do.
var (
	readers   = []auth.Action{auth.ActionRead, auth.ActionExport, auth.ActionFork}
	writers   = append(slices.Clone(readers), auth.ActionWrite, auth.ActionAnswer)
	managers  = append(slices.Clone(writers), auth.ActionManage, auth.ActionShare, auth.ActionDelete)
	shareActs = []auth.Action{auth.ActionRead, auth.ActionExport}
)

func TestSessionRoleCan(t *testing.T) {
	t.Parallel()
	matrix := map[auth.SessionRole][]auth.Action{
		auth.SessionRoleOwner:        managers,
		auth.SessionRoleAdmin:        managers,
		auth.SessionRoleCollaborator: writers,
		auth.SessionRoleViewer:       readers,
		auth.SessionRoleNone:         nil,
		"stranger":                   nil, // a role auth does not know may do nothing
	}
	if len(managers) != len(auth.Actions) {
		t.Fatalf("the matrix covers %d actions, auth has %d: add the new one here", len(managers), len(auth.Actions))
	}
	for role, may := range matrix {
		for _, act := range append(slices.Clone(auth.Actions), "launch") {
			if got, want := role.Can(act), slices.Contains(may, act); got != want {
				t.Errorf("%q.Can(%s) = %v, want %v", role, act, got, want)
			}
		}
	}
	for _, act := range auth.Actions {
		if !act.Known() {
			t.Errorf("%s is not known", act)
		}
	}
	if auth.Action("launch").Known() {
		t.Error("an unknown action is known")
	}
}

func TestAuthorizeRoleByAction(t *testing.T) {
	t.Parallel()
	authtest.ForEachDB(t, func(t *testing.T, db *models.DB) {
		svc := authtest.NewService(t, db, nil, nil)
		ctx := t.Context()
		actors := map[string]*auth.Actor{}
		for _, name := range []string{"owner", "collab", "viewer", "other", "admin", "adminviewer", "gone"} {
			u := authtest.MustUser(t, svc, name, name+"-password", name == "admin" || name == "adminviewer")
			actors[name] = &auth.Actor{UserID: u.ID, Name: u.Name, Role: u.Role, Via: auth.ViaCookie}
		}
		sid := authtest.CreateSession(t, db, actors["owner"].UserID)
		otherSID := authtest.CreateSession(t, db, actors["other"].UserID)
		for name, role := range map[string]auth.SessionRole{
			"collab": auth.SessionRoleCollaborator, "viewer": auth.SessionRoleViewer,
			"adminviewer": auth.SessionRoleViewer, "gone": auth.SessionRoleCollaborator,
		} {
			if err := svc.AddMember(ctx, sid, name, role); err != nil {
				t.Fatal(err)
			}
		}
		shareTok, _, err := svc.CreateShareLink(ctx, sid, actors["owner"].UserID, nil)
		if err != nil {
			t.Fatal(err)
		}
		actors["share"], err = svc.ShareActor(ctx, shareTok)
		if err != nil {
			t.Fatal(err)
		}
		actors["anonymous"] = nil
		// An actor resolved before its account was deleted.
		if err := svc.DeleteUser(ctx, "gone"); err != nil {
			t.Fatal(err)
		}

		var (
			all    = func(r auth.SessionRole) map[auth.Action]want { return rowOf(r, auth.Actions, nil) }
			none   = rowOf("", nil, auth.ErrNotFound)
			unauth = rowOf("", nil, auth.ErrUnauthenticated)
			forbid = auth.ErrForbidden
		)
		collab := rowOf(auth.SessionRoleCollaborator, writers, forbid)
		viewer := rowOf(auth.SessionRoleViewer, readers, forbid)
		share := rowOf(auth.SessionRoleViewer, shareActs, auth.ErrUnauthenticated)
		tests := []struct {
			actor, session string
			want           map[auth.Action]want
		}{
			{"owner", sid, all(auth.SessionRoleOwner)},
			{"admin", sid, all(auth.SessionRoleAdmin)},
			{"adminviewer", sid, all(auth.SessionRoleAdmin)}, // admin outranks membership
			{"collab", sid, collab},
			{"viewer", sid, viewer},
			{"other", sid, none},
			{"other", otherSID, all(auth.SessionRoleOwner)},
			{"owner", otherSID, none},
			{"owner", "no-such-session", none},
			{"admin", "no-such-session", none},
			{"anonymous", sid, unauth},
			{"anonymous", "no-such-session", unauth},
			{"share", sid, share},
			{"share", otherSID, unauth},
			{"gone", sid, unauth},
		}
		for _, tt := range tests {
			for _, act := range auth.Actions {
				w := tt.want[act]
				role, err := svc.Authorize(ctx, actors[tt.actor], tt.session, act)
				ok := w.err == nil && err == nil || w.err != nil && errors.Is(err, w.err)
				// On ErrForbidden the role is still reported.
				if !ok || err == nil && role != w.role {
					t.Errorf("%s on %s, %s: got (%q, %v), want (%q, %v)", tt.actor, label(tt.session, sid), act, role, err, w.role, w.err)
				}
			}
		}

		if _, err := svc.Authorize(ctx, actors["owner"], sid, "launch"); !errors.Is(err, auth.ErrForbidden) {
			t.Errorf("unknown action = %v, want ErrForbidden", err)
		}
		// Removing a member takes effect on the next call.
		if err := svc.RemoveMember(ctx, sid, "collab"); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Authorize(ctx, actors["collab"], sid, auth.ActionRead); !errors.Is(err, auth.ErrNotFound) {
			t.Errorf("removed member = %v, want ErrNotFound", err)
		}
		// Demoting an admin too.
		if err := svc.SetRole(ctx, "adminviewer", auth.RoleUser); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Authorize(ctx, actors["adminviewer"], sid, auth.ActionWrite); !errors.Is(err, auth.ErrForbidden) {
			t.Errorf("demoted admin writes = %v, want ErrForbidden", err)
		}

		for name, a := range actors {
			err := svc.CanCreateSession(a)
			if wantOK := a.IsUser(); wantOK != (err == nil) || !wantOK && !errors.Is(err, auth.ErrUnauthenticated) {
				t.Errorf("CanCreateSession(%s) = %v", name, err)
			}
		}
	})
}

type want struct {
	role auth.SessionRole
	err  error
}

// rowOf expects role with no error for the actions in may and deny for
// the others.
func rowOf(role auth.SessionRole, may []auth.Action, deny error) map[auth.Action]want {
	out := map[auth.Action]want{}
	for _, act := range auth.Actions {
		out[act] = want{role, deny}
		if slices.Contains(may, act) {
			out[act] = want{role, nil}
		}
	}
	return out
}

func label(session, main string) string {
	if session == main {
		return "the session"
	}
	return fmt.Sprintf("session %.8s", session)
}

func TestMembers(t *testing.T) {
	t.Parallel()
	authtest.ForEachDB(t, func(t *testing.T, db *models.DB) {
		svc := authtest.NewService(t, db, nil, nil)
		ctx := t.Context()
		owner := authtest.MustUser(t, svc, "owner", "owner-password", false)
		authtest.MustUser(t, svc, "bob", "bob-password", false)
		authtest.MustUser(t, svc, "amy", "amy-password", false)
		sid := authtest.CreateSession(t, db, owner.ID)

		tests := []struct {
			name, user, session string
			role                auth.SessionRole
			want                error
		}{
			{"viewer", "bob", sid, auth.SessionRoleViewer, nil},
			{"upgrade to collaborator", "bob", sid, auth.SessionRoleCollaborator, nil},
			{"second member", "amy", sid, auth.SessionRoleViewer, nil},
			{"owner cannot be a member", "owner", sid, auth.SessionRoleViewer, auth.ErrInvalidInput},
			{"owner is not a grantable role", "amy", sid, auth.SessionRoleOwner, auth.ErrInvalidInput},
			{"admin is not a grantable role", "amy", sid, auth.SessionRoleAdmin, auth.ErrInvalidInput},
			{"unknown user", "nobody", sid, auth.SessionRoleViewer, auth.ErrNotFound},
			{"unknown session", "bob", "no-such-session", auth.SessionRoleViewer, auth.ErrNotFound},
		}
		for _, tt := range tests {
			err := svc.AddMember(ctx, tt.session, tt.user, tt.role)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("%s: AddMember = %v, want %v", tt.name, err, tt.want)
			}
		}
		ms, err := svc.ListMembers(ctx, sid)
		if err != nil || len(ms) != 2 || ms[0].Name != "amy" || ms[1].Name != "bob" || ms[1].Role != auth.SessionRoleCollaborator {
			t.Fatalf("ListMembers = %+v, %v", ms, err)
		}
		if err := svc.RemoveMember(ctx, sid, "amy"); err != nil {
			t.Fatal(err)
		}
		if err := svc.RemoveMember(ctx, sid, "amy"); !errors.Is(err, auth.ErrNotFound) {
			t.Fatalf("second RemoveMember = %v", err)
		}
		if _, _, err := svc.CreateShareLink(ctx, sid, owner.ID, nil); err != nil {
			t.Fatal(err)
		}
		if err := svc.ForgetSession(ctx, sid); err != nil {
			t.Fatal(err)
		}
		ms, _ = svc.ListMembers(ctx, sid)
		links, _ := svc.ListShareLinks(ctx, sid)
		if len(ms) != 0 || len(links) != 0 {
			t.Fatalf("after ForgetSession: %d members, %d links", len(ms), len(links))
		}
	})
}

// TestAuthorizeRechecksCredentials: an actor resolved earlier (a
// long-lived WebSocket) loses access when its login or token ends.
func TestAuthorizeRechecksCredentials(t *testing.T) {
	t.Parallel()
	clock := authtest.NewClock()
	db := authtest.OpenSQLite(t)
	svc := authtest.NewService(t, db, clock, nil)
	ctx := t.Context()
	owner := authtest.MustUser(t, svc, "owner", "owner-password", false)
	sid := authtest.CreateSession(t, db, owner.ID)

	login := func() *auth.Actor {
		c, _, err := svc.Login(ctx, "owner", "owner-password", "127.0.0.1", "ua")
		if err != nil {
			t.Fatal(err)
		}
		a, _, err := svc.Session(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = svc.Logout(context.Background(), c) })
		return a
	}
	cookie, _, err := svc.Login(ctx, "owner", "owner-password", "127.0.0.1", "ua")
	if err != nil {
		t.Fatal(err)
	}
	loggedOut, _, _ := svc.Session(ctx, cookie)
	idle := login()
	tok, err := svc.CreateToken(ctx, "owner", "t")
	if err != nil {
		t.Fatal(err)
	}
	revoked, err := svc.TokenActor(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	live := login()
	for name, a := range map[string]*auth.Actor{"logged out": loggedOut, "idle": idle, "revoked": revoked, "live": live} {
		if _, err := svc.Authorize(ctx, a, sid, auth.ActionRead); err != nil {
			t.Fatalf("%s before: %v", name, err)
		}
	}
	if err := svc.Logout(ctx, cookie); err != nil {
		t.Fatal(err)
	}
	ts, _ := svc.ListTokens(ctx, "owner")
	if err := svc.RevokeToken(ctx, "owner", ts[0].ID); err != nil {
		t.Fatal(err)
	}
	clock.Advance(23 * time.Hour)
	live = login() // a fresh one, used now
	clock.Advance(2 * time.Hour)
	for name, a := range map[string]*auth.Actor{"logged out": loggedOut, "idle": idle, "revoked": revoked} {
		if _, err := svc.Authorize(ctx, a, sid, auth.ActionRead); !errors.Is(err, auth.ErrUnauthenticated) {
			t.Errorf("%s after: %v, want ErrUnauthenticated", name, err)
		}
	}
	// Authorize counts as use: a socket active every 20h stays signed in.
	for i := range 3 {
		if _, err := svc.Authorize(ctx, live, sid, auth.ActionRead); err != nil {
			t.Fatalf("live login, check %d: %v", i, err)
		}
		clock.Advance(20 * time.Hour)
	}
}
