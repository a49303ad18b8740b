package main

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"harness/client"
	"harness/internal/app"
	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/testkit/apptest"
	"harness/internal/ws"
)

func TestReadRawPush(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		frame  string
		want   rawPush
		stamps []int64
	}{
		{"one delta", `{"ch":"session/event","session":"s","event":{"seq":7,"time":1,"type":"assistant/chunk","data":{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"t=1000;"}}}}`,
			rawPush{events: 1, lastSeq: 7}, []int64{1000}},
		{"a merged run counts once, from its oldest stamp",
			`{"ch":"session/events","session":"s","events":[{"seq":9,"time":1,"type":"assistant/chunk","data":{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"t=5;t=6;t=7;"}},"from":7}]}`,
			rawPush{events: 1, lastSeq: 9}, []int64{5}},
		{"a block's end repeats the stamps but is no delta",
			`{"ch":"session/events","session":"s","events":[{"seq":3,"time":1,"type":"assistant/chunk","data":{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"t=30;"}}},{"seq":4,"time":1,"type":"assistant/chunk","data":{"turn":1,"step":1,"chunk":{"type":"block-end","index":0,"block":{"type":"text","text":"t=10;t=30;"}}}},{"seq":5,"time":1,"type":"turn/end","data":{"turn":1}}]}`,
			rawPush{events: 3, lastSeq: 5, turnEnd: true}, []int64{30}},
		{"replay done", `{"ch":"replay/done","session":"s","head":5}`, rawPush{replayDone: true, lastSeq: -1}, nil},
		{"live state is no event", `{"ch":"agent/status","session":"s","status":"running"}`, rawPush{lastSeq: -1}, nil},
		{"a quoted pattern inside a string is escaped, so not matched",
			`{"ch":"session/event","session":"s","event":{"seq":2,"time":1,"type":"user/message","data":{"text":"{\"seq\":99 \"type\":\"turn/end\""}}}`,
			rawPush{events: 1, lastSeq: 2}, nil},
	}
	for _, tt := range tests {
		var stamps []int64
		got := readRawPush([]byte(tt.frame), func(ns int64) { stamps = append(stamps, ns) })
		if got != tt.want || len(stamps) != len(tt.stamps) {
			t.Errorf("%s: %+v stamps %v, want %+v %v", tt.name, got, stamps, tt.want, tt.stamps)
			continue
		}
		for i := range stamps {
			if stamps[i] != tt.stamps[i] {
				t.Errorf("%s: stamps %v, want %v", tt.name, stamps, tt.stamps)
			}
		}
	}
}

// A raw viewer follows a live turn on a real server: every delta timed
// once, the turn's end seen, and the keepalive's pings answered (the
// turn lasts many ping intervals; a viewer that did not answer would be
// dropped and report an error).
func TestRawViewerFollowsALiveTurn(t *testing.T) {
	t.Parallel()
	const chunks = 40
	a := apptest.StartApp(t, nil, app.Options{
		Providers: []llm.Provider{fake.Tick{Name: "tick", Every: 10 * time.Millisecond, Chunks: chunks}},
		WS:        ws.Options{PingInterval: 30 * time.Millisecond},
	})
	u := a.User(t, "viewer", false)
	ctx := t.Context()
	s, err := u.Client.CreateSession(ctx, client.NewSession{})
	if err != nil {
		t.Fatal(err)
	}
	vctx, stop := context.WithCancel(ctx)
	defer stop()
	ready, ends := make(chan struct{}), make(chan struct{}, 1)
	var delivered, cuts atomic.Int64
	var errs errorLog
	result := make(chan []time.Duration, 1)
	go func() {
		var once atomic.Bool
		result <- rawViewer(vctx, a.URL, u.Token, s.ID, true, false, func() {
			if once.CompareAndSwap(false, true) {
				close(ready)
			}
		}, ends, &delivered, &cuts, &errs)
	}()
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		t.Fatal("no replay/done")
	}
	if _, err := u.Client.SendMessage(ctx, s.ID, "go", "followup"); err != nil {
		t.Fatal(err)
	}
	var samples []time.Duration
	select {
	case <-ends:
		stop()
		samples = <-result
	case <-result:
		_, msgs := errs.summary()
		t.Fatalf("the raw viewer ended before the turn did: %v", msgs)
	case <-time.After(30 * time.Second):
		t.Fatal("the raw viewer saw no turn/end")
	}
	if n, msgs := errs.summary(); n > 0 || cuts.Load() > 0 {
		t.Fatalf("errors %v, cuts %d", msgs, cuts.Load())
	}
	if len(samples) != chunks {
		t.Fatalf("%d deltas timed, want %d", len(samples), chunks)
	}
	for _, d := range samples {
		if d < 0 || d > 10*time.Second {
			t.Fatalf("latency %v from a stamp", d)
		}
	}
	got, err := u.Client.GetSession(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if delivered.Load() != got.Head+1 {
		t.Fatalf("%d events delivered, the session has %d", delivered.Load(), got.Head+1)
	}
}
