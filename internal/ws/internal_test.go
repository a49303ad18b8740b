package ws

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"harness/internal/service"
)

func TestDecodeRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		frame  string
		id     string
		code   service.Code // "" = valid
		wantOp Op
	}{
		{`{"id":"1","op":"ping"}`, "1", "", OpPing},
		{`{"id":"1","op":"subscribe","session":"s","since":4,"render":"html"}`, "1", "", OpSubscribe},
		{`{"id":"1","op":"followup","session":"s","content":"x","extra":true}`, "1", "", OpFollowup},
		{`{"id":"1","op":"ping"`, "", service.CodeBadRequest, ""},
		{`[]`, "", service.CodeBadRequest, ""},
		{`null`, "", service.CodeBadRequest, ""},
		{`{"op":"ping"}`, "", service.CodeBadRequest, OpPing},
		{`{"id":"1"}`, "1", service.CodeBadRequest, ""},
		{`{"id":"1","op":"nope","session":"s"}`, "1", service.CodeUnknownOp, "nope"},
		{`{"id":"1","op":"cancel"}`, "1", service.CodeBadRequest, OpCancel},
		{`{"id":"1","op":"subscribe","session":"s","since":"x"}`, "1", service.CodeBadRequest, ""},
		{`{"id":"` + strings.Repeat("i", 200) + `","op":"ping"}`, "", service.CodeBadRequest, ""},
	}
	for _, tt := range tests {
		req, err := decodeRequest([]byte(tt.frame))
		var code service.Code
		if err != nil {
			code = err.Code
		}
		if code != tt.code || req.ID != tt.id {
			t.Errorf("%.40s: id %q code %q, want id %q code %q", tt.frame, req.ID, code, tt.id, tt.code)
		}
		if tt.code == "" && req.Op != tt.wantOp {
			t.Errorf("%.40s: op %q, want %q", tt.frame, req.Op, tt.wantOp)
		}
	}
}

// The send queue is bounded in bytes: offer refuses a frame past the bound,
// pushWait waits until the queue is below half of it.
func TestSendQueue(t *testing.T) {
	t.Parallel()
	frame := []byte("0123456789")
	fr := func(seq int64) item { return item{frame: frame, seq: seq} }
	q := newSendQueue(4*int64(len(frame)), nil)
	for i := range 4 {
		if written, refused := q.offer(fr(int64(i))); written != 0 || refused {
			t.Fatalf("offer %d refused", i)
		}
	}
	if _, refused := q.offer(fr(4)); !refused {
		t.Fatal("a full queue took a fifth frame")
	}
	if got := q.size(); got != 40 {
		t.Fatalf("size %d, want 40", got)
	}
	// pushWait waits until the queue is below half full.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := q.pushWait(ctx, fr(9)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("pushWait on a full queue: %v", err)
	}
	waited := make(chan error, 1)
	go func() { waited <- q.pushWait(context.Background(), fr(5)) }()
	for want := range int64(3) {
		it, err := q.pop(context.Background())
		if err != nil || it.seq != want {
			t.Fatalf("pop = %d, %v; want %d", it.seq, err, want)
		}
	}
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	for _, want := range []int64{3, 5} {
		if it, _ := q.pop(context.Background()); it.seq != want {
			t.Fatalf("pop = %d, want %d", it.seq, want)
		}
	}
	q.close()
	if _, refused := q.offer(item{}); !refused {
		t.Fatal("a closed queue took an item")
	}
	if _, err := q.pop(context.Background()); !errors.Is(err, errQueueClosed) {
		t.Fatalf("pop on closed: %v", err)
	}
	if err := q.pushWait(context.Background(), item{}); !errors.Is(err, errQueueClosed) {
		t.Fatalf("pushWait on closed: %v", err)
	}
}

// A panic in a handler is answered internal and the connection goes on.
func TestHandlerPanicIsRecovered(t *testing.T) {
	t.Parallel()
	s := newStack(t, Options{})
	s.hub.beforeDispatch = func(r Request) {
		if r.Op == OpPing && r.ID == "boom" {
			panic("boom")
		}
	}
	c := s.hub.newConn(nil, nil, s.owner)
	defer c.shutdown()
	c.handle([]byte(`{"id":"boom","op":"ping"}`))
	c.handle([]byte(`{"id":"fine","op":"ping"}`))
	got := frames(c)
	if len(got) != 2 {
		t.Fatalf("%d answers, want 2", len(got))
	}
	var a, b Response
	_ = json.Unmarshal(got[0], &a)
	_ = json.Unmarshal(got[1], &b)
	if a.Re != "boom" || a.OK || a.Error == nil || a.Error.Code != service.CodeInternal {
		t.Fatalf("panicking request answered %s", got[0])
	}
	if b.Re != "fine" || !b.OK {
		t.Fatalf("next request answered %s", got[1])
	}
}

// FuzzFrame feeds arbitrary frames to the decoder and dispatcher of a
// connection on a real stack: nothing panics (a recovered panic would be
// answered internal), every queued frame is JSON, the first answers the
// request, and the connection's subscriptions are all released after it.
func FuzzFrame(f *testing.F) {
	s := newStack(f, Options{SendBytes: 64 << 10})
	sid := s.session
	for _, seed := range []string{
		`{"id":"1","op":"ping"}`,
		`{"id":"1","op":"subscribe","session":"` + sid + `"}`,
		`{"id":"1","op":"subscribe","session":"` + sid + `","since":3,"render":"html"}`,
		`{"id":"1","op":"unsubscribe","session":"` + sid + `"}`,
		`{"id":"1","op":"followup","session":"` + sid + `","content":"hi"}`,
		`{"id":"1","op":"steer","session":"` + sid + `","content":"now"}`,
		`{"id":"1","op":"cancel","session":"` + sid + `","keepInbox":true}`,
		`{"id":"1","op":"inbox.edit","session":"` + sid + `","item":"x","content":"y"}`,
		`{"id":"1","op":"inbox.remove","session":"` + sid + `","item":"x"}`,
		`{"id":"1","op":"inbox.steer","session":"` + sid + `","item":"x"}`,
		`{"id":"1","op":"approve","session":"` + sid + `","approval":"a","decision":"allow"}`,
		`{"id":"1","op":"answer","session":"` + sid + `","question":"q","answers":[{"id":"q1","selected":["yes"]}]}`,
		`{"id":"1","op":"set_mode","session":"` + sid + `","mode":"auto"}`,
		`{"id":"1","op":"set_model","session":"` + sid + `","provider":"demo","model":"demo"}`,
		`{"id":"1","op":"subscribe","session":"missing","since":-1}`,
		`{"id":"1","op":"subscribe","session":"` + sid + `","since":999999}`,
		`{"id":"1","op":"`, `{}`, `[]`, `"x"`, `null`, ``, "\x00\xff",
		`{"id":{"a":1},"op":["ping"]}`,
		`{"id":"1","op":"answer","session":"` + sid + `","question":"q","answers":[{"id":1}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, a := range []*struct{ name string }{{"owner"}, {"viewer"}} {
			actor := s.owner
			if a.name == "viewer" {
				actor = s.viewer
			}
			c := s.hub.newConn(nil, nil, actor)
			c.handle(data)
			got := frames(c)
			c.shutdown()
			got = append(got, frames(c)...)
			if len(got) == 0 {
				t.Fatalf("%s: no answer to %q", a.name, data)
			}
			for _, fr := range got {
				if !json.Valid(fr) {
					t.Fatalf("%s: invalid frame %q", a.name, fr)
				}
			}
			var first struct {
				Re    *string        `json:"re"`
				Ch    Channel        `json:"ch"`
				Error *service.Error `json:"error"`
			}
			_ = json.Unmarshal(got[0], &first)
			if first.Re == nil && first.Ch != ChError {
				t.Fatalf("%s: first frame %s neither answers nor reports an error", a.name, got[0])
			}
			if first.Error != nil && first.Error.Code == service.CodeInternal {
				t.Fatalf("%s: %q was answered internal: %s", a.name, data, got[0])
			}
		}
		if n := s.hub.Stats().Topics; n != 0 {
			t.Fatalf("%d topics left after the connections ended", n)
		}
	})
}
