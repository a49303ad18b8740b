package replica

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"harness/internal/auth"
)

// The owner runs a forwarded command only when a replica holding the
// shared key signed it recently; the actor it runs as is the one the
// sender authenticated, credential included (the owner's service checks
// it again).
func TestForwardedCommandsMustBeSigned(t *testing.T) {
	t.Parallel()
	key := []byte("0123456789abcdef0123456789abcdef")
	var ran []*auth.Actor
	r := New(Deps{ID: "owner", Key: key})
	r.SetExecutor(func(_ context.Context, a *auth.Actor, req []byte) []byte {
		ran = append(ran, a)
		return []byte(`{"re":"1","ok":true}`)
	})
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()

	actor := &auth.Actor{UserID: "u1", Name: "ada", Role: auth.RoleAdmin, Via: auth.ViaCookie, CredentialID: "login-1"}
	body, _ := json.Marshal(commandBody{Actor: wireActor(actor), Request: json.RawMessage(`{"id":"1","op":"cancel","session":"s"}`)})
	now := time.Now()
	cases := []struct {
		name   string
		sign   func(*http.Request)
		status int
	}{
		{"unsigned", func(*http.Request) {}, http.StatusForbidden},
		{"another key", func(q *http.Request) { sign(q, []byte("another key, not the shared one!"), "peer", body, now) }, http.StatusForbidden},
		{"too old", func(q *http.Request) { sign(q, key, "peer", body, now.Add(-2*maxSkew)) }, http.StatusForbidden},
		{"body changed after signing", func(q *http.Request) { sign(q, key, "peer", append([]byte(" "), body...), now) }, http.StatusForbidden},
		{"signed", func(q *http.Request) { sign(q, key, "peer", body, now) }, http.StatusOK},
	}
	for _, c := range cases {
		q, _ := http.NewRequest(http.MethodPost, srv.URL+PathPrefix+"/command", bytes.NewReader(body))
		c.sign(q)
		res, err := http.DefaultClient.Do(q)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != c.status {
			t.Errorf("%s: status %d, want %d", c.name, res.StatusCode, c.status)
		}
	}
	if len(ran) != 1 {
		t.Fatalf("the executor ran %d times, want once (for the signed request)", len(ran))
	}
	if got := *ran[0]; got != *actor {
		t.Fatalf("ran as %+v, want %+v", got, *actor)
	}
}
