package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"harness/client"
	"harness/internal/testkit/poll"
)

// readRoute is one read a replica answers about a session, reduced to
// what must not depend on the replica asked.
type readRoute struct {
	name string
	path func(id string) string
	// view reduces a 200 answer; it fails the test on a malformed one.
	view func(t *testing.T, id string, body []byte) string
	// owner is what the owner's view must hold.
	owner []string
}

var (
	pageStatus = regexp.MustCompile(`id="agent-status" data-status="([^"]*)"`)
	pageHead   = regexp.MustCompile(`data-head="(-?\d+)"`)
)

// readRoutes are the reads of a session's live state, a signed-in
// reader's and a share link's (token).
func readRoutes(approval, queued, token string) []readRoute {
	page := func(t *testing.T, _ string, b []byte) string {
		st, head := pageStatus.FindSubmatch(b), pageHead.FindSubmatch(b)
		if st == nil || head == nil {
			t.Fatalf("chat page without status or head: %s", b)
		}
		return fmt.Sprintf("status=%s head=%s approval shown=%v queued shown=%v",
			st[1], head[1], strings.Contains(string(b), approval), strings.Contains(string(b), queued))
	}
	events := func(t *testing.T, _ string, b []byte) string {
		var p client.EventPage
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatalf("events: %v: %s", err, b)
		}
		sum := sha256.Sum256(b)
		return fmt.Sprintf("head=%d events=%d sha256=%s", p.Head, len(p.Events), hex.EncodeToString(sum[:8]))
	}
	return []readRoute{
		{"GET /api/sessions/{id}", func(id string) string { return "/api/sessions/" + id }, func(t *testing.T, _ string, b []byte) string {
			var s client.Session
			if err := json.Unmarshal(b, &s); err != nil {
				t.Fatalf("session: %v: %s", err, b)
			}
			var pending, queue []string
			for _, in := range s.Interactions {
				pending = append(pending, in.Kind+":"+in.ID)
			}
			for _, m := range s.Queue.Queued {
				queue = append(queue, m.ID)
			}
			return fmt.Sprintf("status=%s head=%d pending=%v queued=%v steering=%d allowed=%v context=%d/%d",
				s.Status, s.Head, pending, queue, len(s.Queue.Steering), s.AllowedTools, s.Context.Tokens, s.Context.Window)
		}, []string{"status=running", "pending=[approval:" + approval + "]", "queued=[" + queued + "]"}},
		{"GET /sessions/{id} (chat page)", func(id string) string { return "/sessions/" + id }, page,
			[]string{"status=running", "approval shown=true", "queued shown=true"}},
		{"GET /api/sessions/{id}/events", func(id string) string { return "/api/sessions/" + id + "/events" }, events, []string{"events="}},
		{"GET /s/{token} (shared page)", func(string) string { return "/s/" + token }, page, []string{"status=running"}},
		{"GET /s/{token}/events", func(string) string { return "/s/" + token + "/events" }, events, []string{"events="}},
		{"GET /api/sessions (status column)", func(string) string { return "/api/sessions" }, func(t *testing.T, id string, b []byte) string {
			var l client.SessionList
			if err := json.Unmarshal(b, &l); err != nil {
				t.Fatalf("list: %v: %s", err, b)
			}
			for _, r := range l.Sessions {
				if r.ID == id {
					return fmt.Sprintf("status=%s head=%d", r.Status, r.Head)
				}
			}
			return "not listed"
		}, []string{"status=running"}},
	}
}

var csrfField = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

// signIn signs in on the replica at base as a browser does; the cookie
// works on every replica (one database), and every replica is on
// 127.0.0.1, where a cookie is sent to every port.
func signIn(t *testing.T, base, name, pass string) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	res, err := c.Get(base + "/login")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	m := csrfField.FindSubmatch(b)
	if m == nil {
		t.Fatalf("no CSRF token on the login page: %s", b)
	}
	res, err = c.PostForm(base+"/login", url.Values{"_csrf": {string(m[1])}, "name": {name}, "password": {pass}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("sign in: %s", res.Status)
	}
	return c
}

// read GETs path on the replica at base as the browser c.
func read(t *testing.T, c *http.Client, base, path string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, b
}

// Every replica answers a session's reads as its owner does. Replica a
// owns a session waiting for an approval, with a message queued behind
// it: the session, its chat page, its events, its shared page and events
// and its status in the list read through b and c (which do not run it)
// equal a's answers, and none is ever an error. Then a is killed: until
// its lease lapses b and c answer every read from the stored log (the
// forward fails), never 503, and once one of them took the session over
// (the turn repaired, the queue run) both give the new owner's answer.
func TestReplicaReadsAnswerAsTheOwner(t *testing.T) {
	t.Parallel()
	procs, tok := replicaProcs(t, 3, 3*time.Second)
	owner := procs[0]
	ca := client.New(owner.URL, client.WithToken(tok))
	ctx := t.Context()
	s, err := ca.CreateSession(ctx, client.NewSession{Title: "reads anywhere", Mode: "ask"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ca.SendMessage(ctx, s.ID, "run: echo approve me", "followup"); err != nil {
		t.Fatal(err)
	}
	var approval string
	poll.Eventually(t, "the owner to ask for an approval", func() bool {
		got, err := ca.GetSession(ctx, s.ID)
		if err != nil || len(got.Interactions) != 1 {
			return false
		}
		approval = got.Interactions[0].ID
		return got.Status == "running"
	}, poll.Within(30*time.Second))
	queued, err := ca.SendMessage(ctx, s.ID, "queued behind the approval", "followup")
	if err != nil {
		t.Fatal(err)
	}

	link, err := ca.CreateShareLink(ctx, s.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	browser := signIn(t, owner.URL, "replica", "replica-password")
	routes := readRoutes(approval, queued, link.Token)
	for _, r := range routes {
		t.Run(r.name, func(t *testing.T) {
			code, body := read(t, browser, owner.URL, r.path(s.ID))
			if code != http.StatusOK {
				t.Fatalf("the owner answered %d: %s", code, body)
			}
			want := r.view(t, s.ID, body)
			for _, w := range r.owner {
				if !strings.Contains(want, w) {
					t.Fatalf("the owner's answer %q lacks %q", want, w)
				}
			}
			for i, p := range procs[1:] {
				var got string
				// Equal at once when forwarded; the status column
				// follows the owner's notifications.
				if !poll.Wait(t, func() bool {
					code, body := read(t, browser, p.URL, r.path(s.ID))
					if code != http.StatusOK {
						t.Fatalf("replica %c answered %d: %s", 'b'+i, code, body)
					}
					got = r.view(t, s.ID, body)
					return got == want
				}, poll.Within(30*time.Second)) {
					t.Fatalf("replica %c answers\n\t%s\nthe owner\n\t%s", 'b'+i, got, want)
				}
			}
		})
	}

	owner.kill()
	others := procs[1:]
	var views []string
	var last string
	if !poll.Wait(t, func() bool {
		views = views[:0]
		for i, p := range others {
			for j, r := range routes {
				code, body := read(t, browser, p.URL, r.path(s.ID))
				if code != http.StatusOK {
					t.Fatalf("replica %c answered %s with %d while the owner is dead: %s", 'b'+i, r.name, code, body)
				}
				if j == 0 {
					views = append(views, r.view(t, s.ID, body))
				}
			}
		}
		if seen := strings.Join(views, " | "); seen != last {
			t.Logf("after the owner's death: %s", seen)
			last = seen
		}
		// Taken over: the repair closed the turn, the queued message ran.
		return views[0] == views[1] && strings.HasPrefix(views[0], "status=idle") && strings.Contains(views[0], "pending=[] queued=[]")
	}, poll.Within(60*time.Second), poll.Every(50*time.Millisecond)) {
		t.Fatalf("after the owner's death the replicas answer %q", views)
	}
}
