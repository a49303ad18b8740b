package web_test

import (
	"net/http"
	"strings"
	"testing"

	"harness/internal/auth"
)

// The timeline panel's events routes: the chat page names the REST route
// for signed-in readers (owner and viewer) and the link's own route on a
// share page; the link's route answers what the REST route answers, pages
// with since and limit, and refuses a revoked link.
func TestTimelineEventsRoutes(t *testing.T) {
	t.Parallel()
	e := newPageEnv(t)
	admin := e.login("admin", "admin-password")
	id := admin.newSession("hello timeline", "auto")
	ctx := t.Context()
	if err := e.app.Auth.AddMember(ctx, id, "bob", auth.SessionRoleViewer); err != nil {
		t.Fatal(err)
	}
	bob := e.login("bob", "bob-password")
	apiURL := "/api/sessions/" + id + "/events"
	for who, u := range map[string]*user{"owner": admin, "viewer": bob} {
		res, body := u.get("/sessions/" + id)
		wantStatus(t, who+" chat page", res, http.StatusOK)
		wantBody(t, who+" chat page", body, `id="timeline-button"`, `id="timeline-panel" data-events="`+apiURL+`"`)
		res, _ = u.get(apiURL + "?since=-1")
		wantStatus(t, who+" events", res, http.StatusOK)
	}

	owner, err := e.app.Auth.GetUser(ctx, "admin")
	if err != nil {
		t.Fatal(err)
	}
	tok, linkID, err := e.app.Auth.CreateShareLink(ctx, id, owner.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	anon := &user{e: e, c: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	res, body := anon.get("/s/" + tok)
	wantStatus(t, "share page", res, http.StatusOK)
	shareURL := "/s/" + tok + "/events"
	wantBody(t, "share page", body, `id="timeline-button"`, `id="timeline-panel" data-events="`+shareURL+`"`)

	for _, q := range []string{"?since=-1", "?since=3&limit=5", "?since=-1&limit=1"} {
		_, want := admin.get(apiURL + q)
		res, got := anon.get(shareURL + q)
		wantStatus(t, "share events "+q, res, http.StatusOK)
		if got != want || !strings.HasPrefix(got, `{"events":[{"seq":`) {
			t.Errorf("share events %s:\n%.300s\nwant the REST answer:\n%.300s", q, got, want)
		}
		if cc := res.Header.Get("Cache-Control"); cc != "no-store" {
			t.Errorf("share events %s: Cache-Control %q", q, cc)
		}
	}
	if res, _ := anon.get(shareURL + "?since=-2"); res.StatusCode != http.StatusBadRequest {
		t.Errorf("since=-2: %d", res.StatusCode)
	}
	// The link's route reads only its own session, and only while it lives.
	if res, _ := anon.get(apiURL + "?since=-1"); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("the REST route without an account: %d", res.StatusCode)
	}
	if err := e.app.Auth.RevokeShareLink(ctx, id, linkID); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{shareURL + "?since=-1", "/s/not-a-token/events?since=-1"} {
		if res, _ := anon.get(p); res.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", p, res.StatusCode)
		}
	}
}
