package web

import (
	"net/http"
	"testing"
)

// safeNext lets through only paths of this site, however they are
// encoded or mangled.
func TestSafeNext(t *testing.T) {
	t.Parallel()
	tests := []struct{ next, want string }{
		{"/", "/"},
		{"/sessions/abc", "/sessions/abc"},
		{"/s/abc?x=1", "/s/abc?x=1"},
		{"/?q=a%20b&archived=1", "/?q=a%20b&archived=1"},
		{"/?q=%2F%2F", "/?q=%2F%2F"}, // a query is never read as a host
		{"/sessions/%C3%A9t%C3%A9", "/sessions/%C3%A9t%C3%A9"},
		{"", "/"},
		{"sessions", "/"},
		{"https://evil.example/", "/"},
		{"javascript:alert(1)", "/"},
		{"//evil.example/", "/"},
		{"///evil.example/", "/"},
		{"/\\evil.example", "/"},
		{"\\\\evil.example", "/"},
		{"/\t/evil.example/phish", "/"},
		{"/\n/evil.example", "/"},
		{"/\r\n/evil.example", "/"},
		{"/ /evil.example", "/"},
		{"/\u00a0/evil.example", "/"},
		{"/\x00/evil.example", "/"},
		{"/\x7f/evil.example", "/"},
		{"/%09/evil.example/phish", "/"},
		{"/%0a/evil.example", "/"},
		{"/%2F/evil.example", "/"},
		{"/%2f%2fevil.example", "/"},
		{"/%5Cevil.example", "/"},
		{"/%252F/evil.example", "/"},
		{"/%25252F/evil.example", "/"},
		{"/%zz", "/"},
		{"/\xff", "/"},
		{"/a//b", "/"},
		{"/a#//b", "/"},
		{"/?x=http://evil.example", "/"},
	}
	for _, tt := range tests {
		if got := safeNext(tt.next); got != tt.want {
			t.Errorf("safeNext(%q) = %q, want %q", tt.next, got, tt.want)
		}
	}
}

// The case end to end: a signed-in user following a crafted login
// link is sent home, not off-site.
func TestLoginNextStaysOnSite(t *testing.T) {
	t.Parallel()
	env := newScenarioEnv(t, scenarioOptions{})
	cookie, _ := env.login(t, actorOwner)
	tests := []struct{ rawQuery, want string }{
		{"next=/%09/evil.example/phish", "/"},
		{"next=/%0A/evil.example", "/"},
		{"next=/%5C/evil.example", "/"},
		{"next=%2F%2Fevil.example", "/"},
		{"next=/%252F/evil.example", "/"},
		{"next=/sessions/x", "/sessions/x"},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(http.MethodGet, env.URL+"/login?"+tt.rawQuery, nil)
		req.AddCookie(&http.Cookie{Name: sessionCookie, Value: cookie})
		res, _ := env.do(t, req)
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != tt.want {
			t.Errorf("%s: %d to %q, want %q", tt.rawQuery, res.StatusCode, res.Header.Get("Location"), tt.want)
		}
	}
}
