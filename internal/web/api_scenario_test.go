package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"harness/internal/llm/fake"
	"harness/internal/service"
	"harness/internal/testkit"
	"harness/internal/ws"
)

// withSessionAPI adds the session service and the WebSocket hub to a
// scenario environment: the test stack (testkit.Stack: the real writer,
// manager with the offline demo model, service) over the scenario database
// and accounts, and a hub. Its Snapshot waits for the scenario session to
// be idle and flushed, so a turn started by an accepted row is not blamed
// on the next actor.
// scenarioIDs numbers WebSocket scenario requests.
var scenarioIDs atomic.Int64

func withSessionAPI(t *testing.T) scenarioOptions {
	return scenarioOptions{Deps: func(env *scenarioEnv, d *Deps) {
		st := testkit.NewStack(t, testkit.StackOptions{
			Log: d.Log, DB: env.DB, Auth: env.Auth, Demo: true, DemoOptions: []fake.Option{fake.WithChunkDelay(0)},
		})
		hub := ws.New(ws.Deps{Log: d.Log, Service: st.Service, Manager: st.Manager})
		d.Service, d.WS = st.Service, hub
		// Registered after the stack's cleanup, so the hub closes first.
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_ = hub.Close(ctx)
		})
		env.Snapshot = func(t *testing.T) any {
			t.Helper()
			st.WaitIdle(t, env.SessionID)
			if err := st.Writer.Flush(t.Context(), env.SessionID); err != nil {
				t.Fatal(err)
			}
			return env.defaultSnapshot(t)
		}
	}}
}

// Expectations shared by many rows.
var (
	// readers: the session's owner, members, an admin (and share links
	// where they apply); other users do not learn it exists.
	wantRead  = expect(401, only(200, actorOwner, actorCollaborator, actorViewer, actorAdmin), only(404, actorOther))
	wantWrite = func(ok int) map[scenarioActor]int {
		return expect(401, only(ok, actorOwner, actorCollaborator, actorAdmin), only(403, actorViewer), only(404, actorOther))
	}
	wantManage = func(ok int) map[scenarioActor]int {
		return expect(401, only(ok, actorOwner, actorAdmin), only(403, actorCollaborator, actorViewer), only(404, actorOther))
	}
	wantUser = expect(401, only(200, userActors...))
)

// sessionRESTRows are the REST API's rows.
var sessionRESTRows = []scenarioRow{
	{Name: "GET /api/providers", Method: http.MethodGet, Path: "/api/providers", Want: wantUser},
	{Name: "GET /api/sessions", Method: http.MethodGet, Path: "/api/sessions", Want: wantUser},
	{Name: "GET /api/sessions (token)", Method: http.MethodGet, Path: "/api/sessions", Auth: viaBearer, Want: wantUser},
	{Name: "POST /api/sessions", Method: http.MethodPost, Path: "/api/sessions", JSON: map[string]string{"title": "t"}, Mutates: true, Want: expect(401, only(201, userActors...))},
	{Name: "POST /api/sessions without CSRF", Method: http.MethodPost, Path: "/api/sessions", JSON: map[string]string{}, NoCSRF: true, Want: expect(401, only(403, userActors...))},
	{Name: "GET session", Method: http.MethodGet, Path: "/api/sessions/{session}", Want: wantRead},
	{Name: "GET events", Method: http.MethodGet, Path: "/api/sessions/{session}/events?since=-1", Want: wantRead},
	{Name: "GET export", Method: http.MethodGet, Path: "/api/sessions/{session}/export", Want: wantRead},
	// Before any message: writers get 200 with nothing to compact yet (the
	// compaction itself is tested in api_compact_test.go).
	{Name: "POST compact", Method: http.MethodPost, Path: "/api/sessions/{session}/compact", Mutates: true, Want: wantWrite(200)},
	{Name: "POST compact (token)", Method: http.MethodPost, Path: "/api/sessions/{session}/compact", Auth: viaBearer, JSON: map[string]string{}, Mutates: true, Want: wantWrite(200)},
	{Name: "POST compact without CSRF", Method: http.MethodPost, Path: "/api/sessions/{session}/compact", NoCSRF: true, Want: expect(401, only(403, userActors...))},
	{Name: "POST message", Method: http.MethodPost, Path: "/api/sessions/{session}/messages", JSON: map[string]string{"content": "hello"}, Mutates: true, Want: wantWrite(202)},
	{Name: "POST message (token)", Method: http.MethodPost, Path: "/api/sessions/{session}/messages", Auth: viaBearer, JSON: map[string]string{"content": "hello", "mode": "steer"}, Mutates: true, Want: wantWrite(202)},
	{Name: "POST message without CSRF", Method: http.MethodPost, Path: "/api/sessions/{session}/messages", NoCSRF: true, JSON: map[string]string{"content": "hello"}, Want: expect(401, only(403, userActors...))},
	{Name: "POST cancel", Method: http.MethodPost, Path: "/api/sessions/{session}/cancel", JSON: map[string]bool{"keepInbox": true}, Mutates: true, Want: wantWrite(204)},
	{Name: "POST approval", Method: http.MethodPost, Path: "/api/sessions/{session}/approvals/nope", JSON: map[string]string{"decision": "allow"}, Want: wantWrite(409)},
	{Name: "POST question", Method: http.MethodPost, Path: "/api/sessions/{session}/questions/nope", JSON: map[string]any{"answers": []map[string]any{{"id": "q1", "selected": []string{"yes"}}}}, Want: wantWrite(409)},
	{Name: "PATCH queue item", Method: http.MethodPatch, Path: "/api/sessions/{session}/queue/nope", JSON: map[string]string{"content": "x"}, Want: wantWrite(404)},
	{Name: "DELETE queue item", Method: http.MethodDelete, Path: "/api/sessions/{session}/queue/nope", Want: wantWrite(404)},
	{Name: "POST queue item steer", Method: http.MethodPost, Path: "/api/sessions/{session}/queue/nope/steer", Want: wantWrite(404)},
	{Name: "PATCH mode", Method: http.MethodPatch, Path: "/api/sessions/{session}", JSON: map[string]string{"mode": "ask"}, Mutates: true, Want: wantWrite(200)},
	{Name: "PATCH effort", Method: http.MethodPatch, Path: "/api/sessions/{session}", JSON: map[string]string{"effort": "high"}, Mutates: true, Want: wantWrite(200)},
	{Name: "PATCH title", Method: http.MethodPatch, Path: "/api/sessions/{session}", JSON: map[string]string{"title": "renamed"}, Mutates: true, Want: wantManage(200)},
	{Name: "PATCH archived", Method: http.MethodPatch, Path: "/api/sessions/{session}", JSON: map[string]bool{"archived": false}, Mutates: true, Want: wantManage(200)},
	// Forking needs read access by a real user: viewers may fork.
	{Name: "POST fork", Method: http.MethodPost, Path: "/api/sessions/{session}/fork", Mutates: true, Want: expect(401, only(201, actorOwner, actorCollaborator, actorViewer, actorAdmin), only(404, actorOther))},
	{Name: "GET members", Method: http.MethodGet, Path: "/api/sessions/{session}/members", Want: wantManage(200)},
	// Re-granting the viewer its own role changes nothing.
	{Name: "POST members", Method: http.MethodPost, Path: "/api/sessions/{session}/members", JSON: map[string]string{"name": "viewer", "role": "viewer"}, Mutates: true, Want: wantManage(204)},
	{Name: "DELETE members (not a member)", Method: http.MethodDelete, Path: "/api/sessions/{session}/members/other", Want: wantManage(404)},
	{Name: "GET shares", Method: http.MethodGet, Path: "/api/sessions/{session}/shares", Want: wantManage(200)},
	{Name: "POST shares", Method: http.MethodPost, Path: "/api/sessions/{session}/shares", Mutates: true, Want: wantManage(201)},
	{Name: "DELETE shares (unknown)", Method: http.MethodDelete, Path: "/api/sessions/{session}/shares/nope", Want: wantManage(404)},
	{Name: "DELETE session", Method: http.MethodDelete, Path: "/api/sessions/{session}", Fresh: true, Mutates: true, Want: wantManage(204)},
}

func TestSessionAPIScenarios(t *testing.T) {
	t.Parallel()
	env := newScenarioEnv(t, withSessionAPI(t))
	runScenarios(t, env, sessionRESTRows)
}

// wsCommand sends one request over a fresh socket dialed with the actor's
// credentials and maps the outcome to a status: the upgrade's refusal, 200
// for an accepted command, or the HTTP status of the error code.
func wsCommand(frame map[string]any) func(t *testing.T, env *scenarioEnv, req *http.Request) (int, string) {
	return func(t *testing.T, env *scenarioEnv, req *http.Request) (int, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		h := req.Header.Clone()
		h.Set("Origin", env.URL)
		h.Set("Accept", "application/json")
		u := "ws" + strings.TrimPrefix(req.URL.String(), "http")
		c, res, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: h})
		if err != nil {
			if res == nil {
				t.Fatalf("dial: %v", err)
			}
			b, _ := io.ReadAll(res.Body)
			return res.StatusCode, string(b)
		}
		defer c.CloseNow()
		// A fresh request id each time: a followup's id is its send key,
		// and scenarios send other content under the same actor.
		id := fmt.Sprintf("scenario-%d", scenarioIDs.Add(1))
		f := map[string]any{"id": id, "session": env.SessionID}
		for k, v := range frame {
			f[k] = v
		}
		b, _ := json.Marshal(f)
		if err := c.Write(ctx, websocket.MessageText, b); err != nil {
			t.Fatal(err)
		}
		var seen strings.Builder
		for {
			_, msg, err := c.Read(ctx)
			if err != nil {
				t.Fatalf("read: %v (after %s)", err, seen.String())
			}
			seen.Write(msg)
			var r struct {
				Re    string         `json:"re"`
				OK    bool           `json:"ok"`
				Error *service.Error `json:"error"`
			}
			if json.Unmarshal(msg, &r) != nil || r.Re != id {
				continue
			}
			if r.OK {
				return http.StatusOK, seen.String()
			}
			return r.Error.Code.HTTPStatus(), seen.String()
		}
	}
}

// wsRows are the WebSocket commands' rows.
var wsRows = func() []scenarioRow {
	wantConnected := expect(401, only(200, actorOwner, actorCollaborator, actorViewer, actorOther, actorAdmin, actorShare))
	wantSubscribe := expect(401, only(200, actorOwner, actorCollaborator, actorViewer, actorAdmin, actorShare), only(404, actorOther))
	row := func(name string, frame map[string]any, want map[scenarioActor]int, mutates bool) scenarioRow {
		return scenarioRow{Name: "WS " + name, Method: http.MethodGet, Path: "/ws", Send: wsCommand(frame), Want: want, Mutates: mutates}
	}
	rows := []scenarioRow{
		row("ping", map[string]any{"op": "ping"}, wantConnected, false),
		row("subscribe", map[string]any{"op": "subscribe", "since": -1}, wantSubscribe, false),
		row("unsubscribe", map[string]any{"op": "unsubscribe"}, wantConnected, false),
		// Before any message: nothing to compact yet for writers.
		row("compact", map[string]any{"op": "compact"}, wantWrite(200), true),
		row("followup", map[string]any{"op": "followup", "content": "hello"}, wantWrite(200), true),
		row("steer", map[string]any{"op": "steer", "content": "hello"}, wantWrite(200), true),
		row("cancel", map[string]any{"op": "cancel", "keepInbox": true}, wantWrite(200), true),
		row("inbox.edit", map[string]any{"op": "inbox.edit", "item": "nope", "content": "x"}, wantWrite(404), false),
		row("inbox.remove", map[string]any{"op": "inbox.remove", "item": "nope"}, wantWrite(404), false),
		row("inbox.steer", map[string]any{"op": "inbox.steer", "item": "nope"}, wantWrite(404), false),
		row("approve", map[string]any{"op": "approve", "approval": "nope", "decision": "deny"}, wantWrite(409), false),
		row("answer", map[string]any{"op": "answer", "question": "nope", "answers": []map[string]any{{"id": "q1", "selected": []string{"yes"}}}}, wantWrite(409), false),
		row("set_mode", map[string]any{"op": "set_mode", "mode": "ask"}, wantWrite(200), true),
		row("set_model", map[string]any{"op": "set_model", "provider": "demo"}, wantWrite(200), true),
		row("set_effort", map[string]any{"op": "set_effort", "effort": "high"}, wantWrite(200), true),
	}
	sub := row("subscribe (token)", map[string]any{"op": "subscribe"}, wantSubscribe, false)
	sub.Auth = viaBearer
	follow := row("followup (token)", map[string]any{"op": "followup", "content": "hi"}, wantWrite(200), true)
	follow.Auth = viaBearer
	return append(rows, sub, follow)
}()

func TestWebSocketCommandScenarios(t *testing.T) {
	t.Parallel()
	env := newScenarioEnv(t, withSessionAPI(t))
	runScenarios(t, env, wsRows)
}
