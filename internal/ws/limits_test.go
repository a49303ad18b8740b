package ws_test

import (
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"harness/client"
	"harness/internal/testkit/poll"
	"harness/internal/ws"
)

// A user's sockets (token and cookie ones together) and a share link's are
// capped; the upgrade beyond the cap is refused with 429 rate_limited, and
// closing a socket makes room again.
func TestSocketCap(t *testing.T) {
	t.Parallel()
	const limit = 3
	e := newEnv(t, envOptions{ws: ws.Options{MaxSockets: limit}})
	id := e.session(client.NewSession{Provider: "demo"})
	link, err := e.alice.CreateShareLink(t.Context(), id, nil)
	if err != nil {
		t.Fatal(err)
	}
	other, err := e.alice.CreateShareLink(t.Context(), id, nil)
	if err != nil {
		t.Fatal(err)
	}
	aliceCookie, _, _ := cookieClient(t, e, "alice")
	guest := client.New(e.url, client.WithShareToken(link.Token))
	refused := func(t *testing.T, c *client.Client) {
		t.Helper()
		cn, err := c.Dial(t.Context())
		if err == nil {
			_ = cn.Close()
			t.Fatal("the upgrade beyond the cap was accepted")
		}
		var ce *client.Error
		if !errors.As(err, &ce) || ce.Status != http.StatusTooManyRequests || ce.Code != "rate_limited" {
			t.Fatalf("dial beyond the cap: %v, want 429 rate_limited", err)
		}
	}

	var alice []*client.Conn
	for range limit - 1 {
		alice = append(alice, e.dial(e.alice))
	}
	alice = append(alice, e.dial(aliceCookie))
	refused(t, e.alice)
	refused(t, aliceCookie)
	e.dial(e.bob) // others are not affected

	for range limit {
		e.dial(guest)
	}
	refused(t, guest)
	e.dial(client.New(e.url, client.WithShareToken(other.Token))) // a link of its own

	if err := alice[0].Close(); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, "room for a socket after one closed", func() bool {
		cn, err := e.alice.Dial(t.Context())
		if err != nil {
			return false
		}
		t.Cleanup(func() { _ = cn.Close() })
		return true
	})
}

// A socket flooding requests gets rate_limited answers beyond its budget,
// without being cut, and is served again once it slows down.
func TestCommandRateLimit(t *testing.T) {
	t.Parallel()
	const burst, n = 20, 300
	e := newEnv(t, envOptions{ws: ws.Options{CommandRate: 10, CommandBurst: burst}})
	cn := e.dial(e.alice)
	var ok, limited atomic.Int64
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			err := cn.Ping(t.Context())
			switch {
			case err == nil:
				ok.Add(1)
			case client.CodeOf(err) == "rate_limited":
				limited.Add(1)
			default:
				t.Errorf("ping: %v", err)
			}
		})
	}
	wg.Wait()
	if ok.Load() < burst || limited.Load() == 0 || ok.Load()+limited.Load() != n {
		t.Fatalf("%d ok, %d rate_limited of %d pings; want at least %d ok and some refused", ok.Load(), limited.Load(), n, burst)
	}
	if err := cn.Err(); err != nil {
		t.Fatalf("the flooding socket was cut: %v", err)
	}
	if st := e.app.Hub.Stats(); st.SlowClosed != 0 {
		t.Fatalf("%d slow-consumer cuts", st.SlowClosed)
	}
	poll.Eventually(t, "a ping answered once the budget refills", func() bool {
		return cn.Ping(t.Context()) == nil
	})
}
