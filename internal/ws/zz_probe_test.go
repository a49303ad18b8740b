package ws_test

import (
	"testing"
	"time"

	"harness/client"
)

func TestZZProbeDefaults(t *testing.T) {
	e := newEnv(t, envOptions{demoDelay: 200 * time.Microsecond})
	id := e.session(client.NewSession{Provider: "demo"})
	stalled, _ := e.alice.Dial(t.Context())
	sub, _ := stalled.Subscribe(t.Context(), id, -1, client.SubscribeOptions{Buffer: 1})
	start := time.Now()
	e.alice.SendMessage(t.Context(), id, "long: 30000", "followup")
	for time.Since(start) < 100*time.Second {
		st := e.app.Hub.Stats()
		t.Logf("%4.0fs conns %d slow %d frames %d", time.Since(start).Seconds(), st.Conns, st.SlowClosed, st.FramesOut)
		if st.Conns == 0 || st.SlowClosed > 0 {
			break
		}
		time.Sleep(10 * time.Second)
	}
	for range sub.C {
	}
	<-stalled.Done()
	t.Logf("close %d %v after %s", client.CloseStatus(stalled.Err()), stalled.Err(), time.Since(start))
}
