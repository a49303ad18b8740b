package ws

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"harness/internal/auth"
	"harness/internal/llm/fake"
	"harness/internal/service"
	"harness/internal/testkit"
)

// stack is a hub on the test stack without HTTP (testkit.Stack): SQLite,
// the writer, the manager with the offline demo model, the service; a
// session of the owner's with the viewer as its viewer.
type stack struct {
	hub     *Hub
	svc     *service.Service
	auth    *auth.Service
	owner   *auth.Actor
	viewer  *auth.Actor
	session string
}

func newStack(tb testing.TB, opts Options) *stack {
	tb.Helper()
	st := testkit.NewStack(tb, testkit.StackOptions{
		Log: slog.New(slog.DiscardHandler), Demo: true, DemoOptions: []fake.Option{fake.WithChunkDelay(0)},
	})
	h := New(Deps{Log: st.Log, Service: st.Service, Manager: st.Manager, Options: opts})
	// Registered after the stack's cleanup, so the hub closes first.
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = h.Close(ctx)
	})
	s := &stack{hub: h, svc: st.Service, auth: st.Auth, owner: st.Actor("owner", false), viewer: st.Actor("viewer", false)}
	sess, err := st.Service.CreateSession(tb.Context(), s.owner, service.NewSession{Provider: "demo"})
	if err != nil {
		tb.Fatal(err)
	}
	s.session = sess.ID
	if err := st.Auth.AddMember(tb.Context(), sess.ID, "viewer", auth.SessionRoleViewer); err != nil {
		tb.Fatal(err)
	}
	return s
}

// frames drains what a socketless connection queued.
func frames(c *conn) [][]byte {
	var out [][]byte
	for c.out.len() > 0 {
		it, err := c.out.pop(context.Background())
		if err != nil {
			break
		}
		out = append(out, compose([]item{it}))
	}
	return out
}

// pop waits for the next item.
func (q *sendQueue) pop(ctx context.Context) (item, error) {
	out, err := q.popRun(ctx, nil, 1, 0)
	if err != nil {
		return item{}, err
	}
	return out[0], nil
}
