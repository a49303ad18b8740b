package ws_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"harness/client"
	"harness/internal/testkit/poll"
	"harness/internal/ws"
)

// Each way of taking access away cuts a subscriber streaming a session
// within a second, with session/closed, not at the next keepalive (an
// hour away here). A socket whose credential itself died is then closed
// with 4401; a removed member's socket stays up.
func TestRevocationCutsSubscriptionsAtOnce(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// setup returns the subscriber's client and the revocation.
		setup  func(t *testing.T, e *env, id string) (viewer *client.Client, revoke func() error)
		reason string // of session/closed
		closes bool   // the socket closes with 4401
	}{
		{"share link revoked", func(t *testing.T, e *env, id string) (*client.Client, func() error) {
			link, err := e.alice.CreateShareLink(t.Context(), id, nil)
			if err != nil {
				t.Fatal(err)
			}
			return client.New(e.url, client.WithShareToken(link.Token)),
				func() error { return e.alice.RevokeShareLink(t.Context(), id, link.ID) }
		}, "unauthorized", true},
		{"member removed", func(t *testing.T, e *env, id string) (*client.Client, func() error) {
			member(t, e, id)
			return e.bob, func() error { return e.alice.RemoveMember(t.Context(), id, "bob") }
		}, "not_found", false},
		{"token revoked", func(t *testing.T, e *env, id string) (*client.Client, func() error) {
			member(t, e, id)
			tok, err := e.app.Auth.CreateToken(t.Context(), "bob", "second")
			if err != nil {
				t.Fatal(err)
			}
			ts, err := e.app.Auth.ListTokens(t.Context(), "bob")
			if err != nil {
				t.Fatal(err)
			}
			var tokenID string
			for _, tk := range ts {
				if tk.Name == "second" {
					tokenID = tk.ID
				}
			}
			return client.New(e.url, client.WithToken(tok)),
				func() error { return e.app.Auth.RevokeToken(t.Context(), "bob", tokenID) }
		}, "unauthorized", true},
		{"user disabled", func(t *testing.T, e *env, id string) (*client.Client, func() error) {
			member(t, e, id)
			return e.bob, func() error { return e.app.Auth.SetDisabled(t.Context(), "bob", true) }
		}, "unauthorized", true},
		{"password changed", func(t *testing.T, e *env, id string) (*client.Client, func() error) {
			member(t, e, id)
			bob, _, _ := cookieClient(t, e, "bob")
			return bob, func() error { return e.app.Auth.SetPassword(t.Context(), "bob", "another-password") }
		}, "unauthorized", true},
		{"logged out", func(t *testing.T, e *env, id string) (*client.Client, func() error) {
			member(t, e, id)
			bob, cookie, csrf := cookieClient(t, e, "bob")
			return bob, func() error { return logout(t, e, cookie, csrf) }
		}, "unauthorized", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOptions{ws: ws.Options{PingInterval: time.Hour}})
			id := e.session(client.NewSession{Provider: "demo"})
			viewer, revoke := tt.setup(t, e, id)
			cn := e.dial(viewer)
			sub := subscribe(t, cn, id, -1)
			// About ten seconds of streaming: it still runs when the cut
			// must have happened.
			if _, err := e.alice.SendMessage(t.Context(), id, "long: 5000", "followup"); err != nil {
				t.Fatal(err)
			}
			collect(t, sub, func(p client.Push) bool { return p.Ch == client.ChEvent && p.Event.Type == "assistant/chunk" })

			var mu sync.Mutex
			var closed *client.Push
			go func() {
				for p := range sub.C { // closed right after session/closed
					if p.Ch == client.ChClosed {
						mu.Lock()
						closed = &p
						mu.Unlock()
					}
				}
			}()
			if err := revoke(); err != nil {
				t.Fatalf("revoke: %v", err)
			}
			poll.Eventually(t, "session/closed", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return closed != nil
			}, poll.Within(time.Second))
			if closed.Reason != tt.reason || closed.Error == nil || closed.Error.Code != tt.reason {
				t.Fatalf("session/closed %+v (error %+v), want reason %s", closed, closed.Error, tt.reason)
			}

			if tt.closes {
				poll.Eventually(t, "the socket to close", func() bool {
					select {
					case <-cn.Done():
						return true
					default:
						return false
					}
				}, poll.Within(time.Second))
				if st := client.CloseStatus(cn.Err()); st != int(ws.CloseRevoked) {
					t.Fatalf("socket ended with %v, want close %d", cn.Err(), ws.CloseRevoked)
				}
			} else {
				// The stream goes on, but nothing of it reaches this socket
				// any more: pushes for a session the client no longer
				// follows would land on Pushes. The ping's answer comes
				// after anything queued before it.
				if err := cn.Ping(t.Context()); err != nil {
					t.Fatalf("the member's socket broke: %v", err)
				}
				if _, err := cn.Subscribe(t.Context(), id, -1); client.CodeOf(err) != "not_found" {
					t.Fatalf("subscribe after removal: %v, want not_found", err)
				}
			}
			for {
				select {
				case p, ok := <-cn.Pushes():
					if !ok {
						return
					}
					if p.Session == id && (p.Ch == client.ChEvent || p.Ch == client.ChEvents) {
						t.Fatalf("an event reached the socket after session/closed: %+v", p)
					}
					continue
				default:
				}
				return
			}
		})
	}
}

// member makes bob a viewer of the session.
func member(t *testing.T, e *env, id string) {
	t.Helper()
	if err := e.alice.AddMember(t.Context(), id, "bob", "viewer"); err != nil {
		t.Fatal(err)
	}
}

// cookieClient signs name in as a browser would and returns a client
// carrying the login cookie, the cookie and its CSRF token.
func cookieClient(t *testing.T, e *env, name string) (*client.Client, string, string) {
	t.Helper()
	cookie, info, err := e.app.Auth.Login(t.Context(), name, name+"-password", "127.0.0.1", "test")
	if err != nil {
		t.Fatal(err)
	}
	return client.New(e.url, client.WithCookie(cookie, info.CSRFToken)), cookie, info.CSRFToken
}

// logout posts the logout form as the browser does.
func logout(t *testing.T, e *env, cookie, csrf string) error {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, e.url+"/logout", nil)
	if err != nil {
		return err
	}
	req.AddCookie(&http.Cookie{Name: "harness_session", Value: cookie})
	req.Header.Set("X-CSRF-Token", csrf)
	res, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		return err
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout answered %d", res.StatusCode)
	}
	return nil
}
