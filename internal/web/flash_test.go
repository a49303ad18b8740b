package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// The status banner shows only messages the server knows by key: the
// forms that set one keep their messages; text put in ?flash= by a link
// shows nothing.
func TestFlashShowsOnlyKnownKeys(t *testing.T) {
	t.Parallel()
	e := newPageEnv(t)
	admin, bob := e.login("admin", "admin-password"), e.login("bob", "bob-password")
	id := bob.newSession("", "")
	tests := []struct {
		name     string
		u        *user
		path     string
		form     url.Values
		wantLoc  string
		wantText string
	}{
		{"archive", bob, "/sessions/" + id + "/archive", url.Values{"archived": {"1"}}, "/?flash=session-archived", "Session archived."},
		{"restore", bob, "/sessions/" + id + "/archive", url.Values{"archived": {"0"}}, "/?flash=session-restored", "Session restored from the archive."},
		{"create user", admin, "/admin/users", url.Values{"name": {"carol"}, "password": {"carol-password"}}, "/admin/users?flash=user-created", "User created."},
		{"change role", admin, "/admin/users/carol/role", url.Values{"role": {"admin"}}, "/admin/users?flash=role-changed", "Role changed."},
		{"disable", admin, "/admin/users/carol/disabled", url.Values{"disabled": {"1"}}, "/admin/users?flash=user-disabled", "User disabled; their sessions in browsers have ended."},
		{"enable", admin, "/admin/users/carol/disabled", url.Values{"disabled": {"0"}}, "/admin/users?flash=user-enabled", "User enabled."},
		{"reset password", admin, "/admin/users/carol/password", url.Values{"password": {"another-password"}}, "/admin/users?flash=password-reset", "Password reset; they must sign in again."},
		{"delete", bob, "/sessions/" + id + "/delete", nil, "/?flash=session-deleted", "Session deleted."},
	}
	for _, tt := range tests {
		res, body := tt.u.form(tt.path, tt.form)
		if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || loc != tt.wantLoc {
			t.Fatalf("%s: %d to %q, want %q: %.300s", tt.name, res.StatusCode, loc, tt.wantLoc, body)
		}
		if _, page := tt.u.get(tt.wantLoc); !strings.Contains(page, `role="status">`+tt.wantText+`</div>`) {
			t.Fatalf("%s: the page does not show %q", tt.name, tt.wantText)
		}
	}

	for _, path := range []string{"/", "/settings", "/admin/users"} {
		for _, raw := range []string{
			"Your+account+is+locked.+Call+555-0100",
			"%3Cb%3Ehi%3C%2Fb%3E",
			"session-deleted%20",
			"SESSION-DELETED",
		} {
			_, page := admin.get(path + "?flash=" + raw)
			if strings.Contains(page, `class="flash"`) {
				t.Fatalf("%s?flash=%s shows a banner", path, raw)
			}
		}
	}
}
