package ws_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"harness/client"
)

// rawConn is a hand-rolled socket for frames the client never sends.
type rawConn struct {
	t *testing.T
	c *websocket.Conn
}

func (e *env) rawDial(t *testing.T) *rawConn {
	t.Helper()
	tok, err := e.app.Auth.CreateToken(t.Context(), "alice", "raw")
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := websocket.Dial(t.Context(), "ws"+strings.TrimPrefix(e.url, "http")+"/ws",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + tok}}})
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(8 << 20)
	t.Cleanup(func() { _ = c.CloseNow() })
	return &rawConn{t: t, c: c}
}

func (r *rawConn) send(typ websocket.MessageType, b []byte) {
	r.t.Helper()
	if err := r.c.Write(r.t.Context(), typ, b); err != nil {
		r.t.Fatal(err)
	}
}

// next reads frames until one answers re (or, for re == "", an error push).
func (r *rawConn) next(re string) map[string]any {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(r.t.Context(), 10*time.Second)
	defer cancel()
	for {
		_, b, err := r.c.Read(ctx)
		if err != nil {
			r.t.Fatalf("read: %v", err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			r.t.Fatalf("server sent invalid JSON %q", b)
		}
		if got, ok := m["re"]; ok && got == re {
			return m
		}
		if re == "" && m["ch"] == "error" {
			return m
		}
	}
}

func errCode(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

// Bad input gets coded errors and the connection keeps serving; an
// oversize frame closes it with 1009 and the server keeps serving others.
func TestBadInputGetsCodedErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	id := e.session(client.NewSession{Provider: "demo"})
	bobs, err := e.bob.CreateSession(t.Context(), client.NewSession{})
	if err != nil {
		t.Fatal(err)
	}
	viewerOnly := e.session(client.NewSession{})
	carol, _ := e.user("carol", false)
	if err := e.alice.AddMember(t.Context(), viewerOnly, "carol", "viewer"); err != nil {
		t.Fatal(err)
	}

	r := e.rawDial(t)
	tests := []struct {
		name, frame, re, code string
	}{
		{"malformed JSON", `{"id":"1","op":`, "", "bad_request"},
		{"not JSON at all", `hello`, "", "bad_request"},
		{"no id", `{"op":"ping"}`, "", "bad_request"},
		{"no op", `{"id":"2"}`, "2", "bad_request"},
		{"unknown op", `{"id":"3","op":"frobnicate","session":"x"}`, "3", "unknown_op"},
		{"missing session", `{"id":"4","op":"followup","content":"hi"}`, "4", "bad_request"},
		{"wrong field type", `{"id":"5","op":"subscribe","session":"` + id + `","since":"abc"}`, "5", "bad_request"},
		{"since below -1", `{"id":"6","op":"subscribe","session":"` + id + `","since":-5}`, "6", "bad_request"},
		{"bad render", `{"id":"7","op":"subscribe","session":"` + id + `","render":"pdf"}`, "7", "bad_request"},
		{"unknown session", `{"id":"8","op":"subscribe","session":"no-such-session"}`, "8", "not_found"},
		{"someone else's session", `{"id":"9","op":"subscribe","session":"` + bobs.ID + `"}`, "9", "not_found"},
		{"followup to someone else's session", `{"id":"10","op":"followup","session":"` + bobs.ID + `","content":"hi"}`, "10", "not_found"},
		{"empty followup", `{"id":"11","op":"followup","session":"` + id + `","content":"  "}`, "11", "bad_request"},
		{"oversized message", `{"id":"12","op":"followup","session":"` + id + `","content":"` + strings.Repeat("x", 300<<10) + `"}`, "12", "too_large"},
		{"bad decision", `{"id":"13","op":"approve","session":"` + id + `","approval":"a","decision":"maybe"}`, "13", "bad_request"},
		{"no such approval", `{"id":"14","op":"approve","session":"` + id + `","approval":"a","decision":"allow"}`, "14", "not_pending"},
		{"no such question", `{"id":"15","op":"answer","session":"` + id + `","question":"q","answers":[{"id":"q1","selected":["yes"]}]}`, "15", "not_pending"},
		{"bad mode", `{"id":"16","op":"set_mode","session":"` + id + `","mode":"yolo"}`, "16", "bad_request"},
		{"unknown provider", `{"id":"17","op":"set_model","session":"` + id + `","provider":"nope"}`, "17", "bad_request"},
		{"no such queue item", `{"id":"18","op":"inbox.remove","session":"` + id + `","item":"nope"}`, "18", "item_not_found"},
	}
	for _, tt := range tests {
		r.send(websocket.MessageText, []byte(tt.frame))
		if got := errCode(r.next(tt.re)); got != tt.code {
			t.Errorf("%s: code %q, want %q", tt.name, got, tt.code)
		}
	}
	r.send(websocket.MessageBinary, []byte{1, 2, 3})
	if got := errCode(r.next("")); got != "bad_request" {
		t.Errorf("binary frame: code %q, want bad_request", got)
	}
	// Still serving: a ping answers.
	r.send(websocket.MessageText, []byte(`{"id":"p","op":"ping"}`))
	if m := r.next("p"); m["ok"] != true {
		t.Fatalf("ping after bad input: %v", m)
	}

	// A viewer may follow but not drive.
	cc := e.dial(carol)
	if _, err := cc.Subscribe(t.Context(), viewerOnly, -1); err != nil {
		t.Fatalf("viewer subscribe: %v", err)
	}
	if _, err := cc.Followup(t.Context(), viewerOnly, "hi"); client.CodeOf(err) != "forbidden" {
		t.Fatalf("viewer followup: %v, want forbidden", err)
	}

	// An oversize frame closes the connection with 1009 ...
	r.send(websocket.MessageText, []byte(`{"id":"big","op":"ping","content":"`+strings.Repeat("x", 2<<20)+`"}`))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for {
		_, _, err := r.c.Read(ctx)
		if err != nil {
			if st := websocket.CloseStatus(err); st != websocket.StatusMessageTooBig {
				t.Fatalf("oversize frame: %v (status %d), want close 1009", err, st)
			}
			break
		}
	}
	// ... and the server goes on serving.
	if err := e.dial(e.alice).Ping(t.Context()); err != nil {
		t.Fatalf("ping on a new connection: %v", err)
	}
}

// Connections without credentials, with bad ones, or cross-origin are
// refused at the upgrade.
func TestUpgradeRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	ws := "ws" + strings.TrimPrefix(e.url, "http") + "/ws"
	tok, err := e.app.Auth.CreateToken(t.Context(), "alice", "x")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		header http.Header
		query  string
		want   int
	}{
		{"anonymous", http.Header{"Origin": {e.url}}, "", http.StatusUnauthorized},
		{"bad token", http.Header{"Authorization": {"Bearer hrn_" + strings.Repeat("A", 43)}}, "", http.StatusUnauthorized},
		{"bad share link", http.Header{"Origin": {e.url}}, "?share=" + strings.Repeat("x", 43), http.StatusUnauthorized},
		{"cross-origin", http.Header{"Authorization": {"Bearer " + tok}, "Origin": {"http://evil.example"}}, "", http.StatusForbidden},
	}
	for _, tt := range tests {
		_, res, err := websocket.Dial(t.Context(), ws+tt.query, &websocket.DialOptions{HTTPHeader: tt.header})
		if err == nil {
			t.Errorf("%s: connected", tt.name)
			continue
		}
		if res == nil || res.StatusCode != tt.want {
			t.Errorf("%s: %v, want HTTP %d", tt.name, err, tt.want)
		}
	}
}
