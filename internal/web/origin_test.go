package web

import (
	"context"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/labstack/echo/v4"
)

func TestCheckOrigin(t *testing.T) {
	t.Parallel()
	trusted := []string{"https://harness.example.org", "http://10.0.0.5:8080/"}
	tests := []struct {
		name, origin, host string
		bearer             bool
		proto              string // X-Forwarded-Proto
		want               bool
	}{
		{"no origin, no token", "", "127.0.0.1:8080", false, "", false},
		{"no origin, bearer token", "", "127.0.0.1:8080", true, "", true},
		{"same origin", "http://127.0.0.1:8080", "127.0.0.1:8080", false, "", true},
		{"same origin with a token", "http://127.0.0.1:8080", "127.0.0.1:8080", true, "", true},
		{"other port", "http://127.0.0.1:9090", "127.0.0.1:8080", false, "", false},
		{"other host", "http://evil.example", "127.0.0.1:8080", true, "", false},
		{"suffix trick", "http://example.com.evil.example", "example.com", false, "", false},
		{"https origin on an http server", "https://127.0.0.1:8080", "127.0.0.1:8080", false, "", false},
		{"http origin behind a TLS proxy", "http://example.com", "example.com", false, "https", false},
		{"behind a TLS proxy", "https://example.com", "example.com", false, "https", true},
		{"proxy says http", "https://example.com", "example.com", false, "http", false},
		{"untrusted peer says https", "https://example.com", "example.com", false, "untrusted https", false},
		{"untrusted peer: http stays its origin", "http://example.com", "example.com", false, "untrusted https", true},
		{"explicit default port", "https://example.com:443", "example.com", false, "https", true},
		{"other scheme's default port", "https://example.com:80", "example.com", false, "https", false},
		{"host with default port", "http://example.com", "example.com:80", false, "", true},
		{"case", "http://EXAMPLE.com", "example.com", false, "", true},
		{"null", "null", "example.com", false, "", false},
		{"not a url", "%zz", "example.com", false, "", false},
		{"other scheme", "ftp://example.com", "example.com", false, "", false},
		{"trusted origin", "https://harness.example.org", "127.0.0.1:8080", false, "", true},
		{"trusted, explicit port", "https://harness.example.org:443", "127.0.0.1:8080", false, "", true},
		{"trusted, trailing slash in config", "http://10.0.0.5:8080", "127.0.0.1:8080", false, "", true},
		{"trusted host, wrong scheme", "http://harness.example.org", "127.0.0.1:8080", false, "", false},
	}
	for _, tt := range tests {
		r, _ := http.NewRequest(http.MethodGet, "http://"+tt.host+"/ws", nil)
		if tt.origin != "" {
			r.Header.Set("Origin", tt.origin)
		}
		if tt.bearer {
			r.Header.Set("Authorization", "Bearer hrn_x")
		}
		// The peer (127.0.0.1 here) is a trusted proxy unless the row
		// says otherwise.
		r.RemoteAddr = "127.0.0.1:5555"
		proxy := proxies{netip.MustParsePrefix("127.0.0.1/32")}
		if proto, ok := strings.CutPrefix(tt.proto, "untrusted "); ok {
			proxy, tt.proto = nil, proto
		}
		if tt.proto != "" {
			r.Header.Set("X-Forwarded-Proto", tt.proto)
		}
		r = r.WithContext(context.WithValue(r.Context(), clientKey{}, proxy.clientOf(r)))
		if got := CheckOrigin(r, trusted); got != tt.want {
			t.Errorf("%s: CheckOrigin(origin %q, host %q) = %v, want %v", tt.name, tt.origin, tt.host, got, tt.want)
		}
	}
}

// wsRoute is a stand-in WebSocket endpoint guarded the way /ws must be:
// any actor (users, tokens, share links), same origin. It sends the
// actor's name and closes.
func wsRoute(_ *scenarioEnv, s *Server) {
	s.e.GET("/ws", func(c echo.Context) error {
		conn, err := websocket.Accept(c.Response(), c.Request(), &websocket.AcceptOptions{
			InsecureSkipVerify: true, // RequireSameOrigin has decided
		})
		if err != nil {
			return nil
		}
		ctx := c.Request().Context()
		_ = conn.Write(ctx, websocket.MessageText, []byte(ActorFrom(c).Name))
		return conn.Close(websocket.StatusNormalClosure, "")
	}, s.RequireActor, s.RequireSameOrigin)
}

func TestWebSocketUpgradeGuard(t *testing.T) {
	t.Parallel()
	env := newScenarioEnv(t, scenarioOptions{
		Routes: wsRoute,
		Deps:   func(_ *scenarioEnv, d *Deps) { d.TrustedOrigins = []string{"https://harness.example.org"} },
	})
	self := env.URL // http://127.0.0.1:port
	cookie, _ := env.login(t, actorOwner)
	tests := []struct {
		name     string
		origin   string
		cookie   bool
		bearer   string
		query    string
		want     int    // 101 = upgraded
		wantName string // what the socket says
	}{
		{"cookie, same origin", self, true, "", "", 101, "owner"},
		{"cookie, cross origin", "http://evil.example", true, "", "", 403, ""},
		{"cookie, https origin on this http server", "https" + strings.TrimPrefix(self, "http"), true, "", "", 403, ""},
		{"cookie, trusted origin", "https://harness.example.org", true, "", "", 101, "owner"},
		{"cookie, no origin", "", true, "", "", 403, ""},
		{"token, no origin", "", false, env.tokens[actorViewer], "", 101, "viewer"},
		{"token, cross origin", "http://evil.example", false, env.tokens[actorViewer], "", 403, ""},
		{"bad token", "", false, env.tokens[actorBadToken], "", 401, ""},
		{"anonymous, same origin", self, false, "", "", 401, ""},
		{"share link, same origin", self, false, "", "?share=" + env.shares[actorShare], 101, "guest"},
		{"share link, cross origin", "http://evil.example", false, "", "?share=" + env.shares[actorShare], 403, ""},
		{"revoked share link", self, false, "", "?share=" + env.shares[actorRevokedShare], 401, ""},
		{"expired cookie", self, false, "", "", 401, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			h := http.Header{}
			if tt.origin != "" {
				h.Set("Origin", tt.origin)
			}
			if tt.cookie {
				h.Add("Cookie", sessionCookie+"="+cookie)
			}
			if tt.name == "expired cookie" {
				h.Add("Cookie", sessionCookie+"="+env.expiredCookie)
			}
			if tt.bearer != "" {
				h.Set("Authorization", "Bearer "+tt.bearer)
			}
			url := "ws" + strings.TrimPrefix(env.URL, "http") + "/ws" + tt.query
			conn, res, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: h})
			if tt.want != 101 {
				if err == nil {
					conn.CloseNow()
					t.Fatal("upgrade succeeded, want refusal")
				}
				if res == nil || res.StatusCode != tt.want {
					t.Fatalf("refusal: %v (response %v), want %d", err, res, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			defer conn.CloseNow()
			_, msg, err := conn.Read(ctx)
			if err != nil || string(msg) != tt.wantName {
				t.Fatalf("read %q, %v; want %q", msg, err, tt.wantName)
			}
		})
	}
}

// dialScenario sends a scenario request as a same-origin WebSocket
// handshake: 101 when upgraded, else the refusal's status.
func dialScenario(t *testing.T, env *scenarioEnv, req *http.Request) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	h := req.Header.Clone()
	h.Set("Origin", env.URL)
	u := *req.URL
	u.Scheme = "ws"
	conn, res, err := websocket.Dial(ctx, u.String(), &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		if res == nil {
			t.Fatalf("dial: %v", err)
		}
		return res.StatusCode, err.Error()
	}
	defer conn.CloseNow()
	_, msg, err := conn.Read(ctx)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return http.StatusSwitchingProtocols, string(msg)
}

// TestWebSocketScenarios runs the stand-in socket through the harness,
// the way the real /ws and its commands get rows.
func TestWebSocketScenarios(t *testing.T) {
	t.Parallel()
	env := newScenarioEnv(t, scenarioOptions{Routes: wsRoute})
	users := only(101, userActors...)
	runScenarios(t, env, []scenarioRow{
		{Name: "WS upgrade with cookie", Method: http.MethodGet, Path: "/ws", Send: dialScenario, Want: expect(401, users, only(101, actorShare))},
		{Name: "WS upgrade with token", Method: http.MethodGet, Path: "/ws", Auth: viaBearer, Send: dialScenario, Want: expect(401, users, only(101, actorShare))},
	})
}
