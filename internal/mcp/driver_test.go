package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/color"
	stdpng "image/png"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"harness/internal/auth"
	"harness/internal/driver"
	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/mcp"
	"harness/internal/render"
	"harness/internal/service"
	"harness/internal/session"
	"harness/internal/testkit"
	"harness/internal/testkit/poll"
	"harness/internal/tools"
)

// sessionTools adapts the manager to the driver, as app.MCPTools does.
type sessionTools struct{ m *mcp.Manager }

func (s sessionTools) Open(id, workspace string, confine func(context.Context, tools.Process) (*exec.Cmd, error)) driver.SessionToolSet {
	return s.m.Open(id, workspace, confine)
}

// env is the server's parts (real store, sandbox, workspaces, driver,
// service) with the demo model and m as the sessions' MCP tools.
type env struct {
	t     *testing.T
	st    *testkit.Stack
	m     *mcp.Manager
	alice *auth.Actor
}

// lateImages stores results' images through the stack's service, made
// after the manager (as app does).
type lateImages struct{ s *service.Service }

func (l *lateImages) StoreResultImage(ctx context.Context, id string, data []byte) (tools.MetaImage, error) {
	return l.s.StoreResultImage(ctx, id, data)
}

func newEnv(t *testing.T, cfg mcp.Config, dial mcp.Dialer) *env {
	t.Helper()
	images := &lateImages{}
	m := mcp.New(cfg, mcp.Options{Log: testkit.Logger(), Dial: dial, Images: images})
	st := testkit.NewStack(t, testkit.StackOptions{
		Demo: true, DemoOptions: []fake.Option{fake.WithChunkDelay(time.Millisecond)},
		VerifyRequests: true,
		Manager:        func(o *driver.Options) { o.SessionTools = sessionTools{m} },
	})
	images.s = st.Service
	t.Cleanup(m.Close)
	return &env{t: t, st: st, m: m, alice: st.Actor("alice", false)}
}

func (e *env) session(mode session.PermissionMode) service.Session {
	e.t.Helper()
	s, err := e.st.Service.CreateSession(e.t.Context(), e.alice, service.NewSession{Mode: mode, Provider: "demo"})
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

func (e *env) send(id, text string) {
	e.t.Helper()
	if _, err := e.st.Service.SendMessage(e.t.Context(), e.alice, id, service.Message{Content: text}); err != nil {
		e.t.Fatal(err)
	}
}

// approve waits for the approval of tool and allows it once.
func (e *env) approve(id, tool string) {
	e.t.Helper()
	ag, ok := e.st.Manager.Lookup(id)
	if !ok {
		e.t.Fatal("the session is not loaded")
	}
	var asked driver.Interaction
	poll.Eventually(e.t, "an approval of "+tool, func() bool {
		for _, in := range ag.PendingInteractions() {
			if in.Kind == driver.KindApproval {
				asked = in
				return true
			}
		}
		return false
	}, poll.Within(30*time.Second))
	if asked.ToolName != tool {
		e.t.Fatalf("approval of %q, want %q", asked.ToolName, tool)
	}
	if err := e.st.Service.Approve(e.t.Context(), e.alice, id, asked.ID, service.DecisionAllow); err != nil {
		e.t.Fatal(err)
	}
}

// turn returns the last turn's events.
func (e *env) turn(id string) []session.Event {
	e.t.Helper()
	ag, ok := e.st.Manager.Lookup(id)
	if !ok {
		e.t.Fatal("the session is not loaded")
	}
	evs := ag.Log().Events(0, ag.Log().Len())
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type == session.TypeTurnStart {
			return evs[i:]
		}
	}
	return nil
}

// result is the last turn's only tool result.
func (e *env) result(id string) session.ToolResult {
	e.t.Helper()
	rs := testkit.Find[session.ToolResult](e.t, e.turn(id), session.TypeToolResult)
	if len(rs) != 1 {
		e.t.Fatalf("%d tool results, want 1", len(rs))
	}
	return rs[0]
}

func resultText(r session.ToolResult) string {
	var parts []string
	for _, b := range r.Message.Content {
		parts = append(parts, llm.Message{Content: b.Content}.Text())
	}
	return strings.Join(parts, "\n")
}

func (e *env) answer(id string) string {
	e.t.Helper()
	msgs := testkit.Find[session.AssistantMessage](e.t, e.turn(id), session.TypeAssistantMessage)
	if len(msgs) == 0 {
		e.t.Fatal("no assistant message")
	}
	return msgs[len(msgs)-1].Message.Text()
}

// The demo model's call: rule calls an MCP tool through the driver: the
// tool is in the logged request header, an exec tool waits for approval in
// ask mode, the result reaches the model, arguments the server's schema
// refuses fail before anyone is asked, and the connection closes when the
// session is removed.
func TestDemoCallsAnMCPToolThroughTheDriver(t *testing.T) {
	t.Parallel()
	p := newServer(t)
	e := newEnv(t, mcp.Config{Servers: []mcp.Server{{Name: "srv", CallTimeout: time.Minute, StartTimeout: 10 * time.Second}}}, p.dial)
	s := e.session(session.ModeAsk)

	e.send(s.ID, `call: srv__echo {"text": "over the driver"}`)
	e.approve(s.ID, "srv__echo")
	e.st.WaitIdle(t, s.ID)
	if r := e.result(s.ID); r.Message.Content[0].IsError || resultText(r) != "echo: over the driver" {
		t.Fatalf("result %+v", r)
	}
	if got := e.answer(s.ID); !strings.Contains(got, "echo: over the driver") {
		t.Fatalf("answer %q", got)
	}
	headers := testkit.Find[session.RequestHeader](t, e.turn(s.ID), session.TypeRequestHeader)
	if len(headers) == 0 {
		t.Fatal("no request header logged")
	}
	var offered bool
	for _, tool := range headers[0].Header.Tools {
		offered = offered || tool.Name == "srv__echo"
	}
	if !offered {
		t.Fatalf("srv__echo not in the logged header: %+v", headers[0].Header.Tools)
	}

	e.send(s.ID, `call: srv__echo {"text": 5}`)
	e.st.WaitIdle(t, s.ID)
	r := e.result(s.ID)
	if r.Error == nil || r.Error.Code != tools.CodeInvalidArgs {
		t.Fatalf("bad arguments: %+v", r)
	}
	if asked := testkit.Find[session.ApprovalAsked](t, e.turn(s.ID), session.TypeApprovalAsked); len(asked) != 0 {
		t.Fatalf("approval asked for invalid arguments: %+v", asked)
	}
	// The second turn reused the header: the tool list did not change.
	if hs := testkit.Find[session.RequestHeader](t, e.turn(s.ID), session.TypeRequestHeader); len(hs) != 0 {
		t.Fatalf("the second turn logged a new header: %+v", hs)
	}
	if p.dialCount() != 1 {
		t.Fatalf("dials = %d, want 1", p.dialCount())
	}
}

// An MCP tool answering with an image: the image is stored with the
// session (readable by its readers, not by others), the model gets a note
// with its type and size, and the transcript's card shows it, at the
// people's URL and at a share page's. A result image that is not one
// (bad bytes) is only noted.
func TestMCPImageResultsShowInTheTranscript(t *testing.T) {
	t.Parallel()
	var png bytes.Buffer
	img := image.NewRGBA(image.Rect(0, 0, 3, 2))
	img.Set(1, 1, color.RGBA{R: 200, A: 255})
	if err := stdpng.Encode(&png, img); err != nil {
		t.Fatal(err)
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: "pictures", Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "draw", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.TextContent{Text: "drawn"},
				&sdk.ImageContent{MIMEType: "image/png", Data: png.Bytes()},
				&sdk.ImageContent{MIMEType: "image/png", Data: []byte("not a png")},
			}}, nil
		})
	p := &inProcess{server: srv}
	e := newEnv(t, mcp.Config{Servers: []mcp.Server{{Name: "pics", ReadOnly: true, CallTimeout: time.Minute, StartTimeout: 10 * time.Second}}}, p.dial)
	s := e.session(session.ModeAsk)
	e.send(s.ID, `call: pics__draw {}`)
	e.st.WaitIdle(t, s.ID)

	r := e.result(s.ID)
	text := resultText(r)
	if !strings.Contains(text, "[image: image/png, 3 x 2, "+strconv.Itoa(png.Len())+" bytes; shown to the user in the transcript, not to the model]") ||
		!strings.Contains(text, "[image: image/png, 9 bytes; not shown to the model]") {
		t.Fatalf("the model's text: %q", text)
	}
	var meta tools.MetaImages
	if err := json.Unmarshal(r.Meta, &meta); err != nil || len(meta.Images) != 1 {
		t.Fatalf("meta %s: %v", r.Meta, err)
	}
	im := meta.Images[0]
	got, err := e.st.Service.Attachment(t.Context(), e.alice, s.ID, im.Attachment)
	if err != nil || !bytes.Equal(got.Data, png.Bytes()) || got.MediaType != "image/png" || got.Width != 3 || got.Height != 2 {
		t.Fatalf("stored image %+v, %v", got.AttachmentInfo, err)
	}
	if _, err := e.st.Service.Attachment(t.Context(), e.st.Actor("mallory", false), s.ID, im.Attachment); service.AsError(err) == nil || service.AsError(err).Code != service.CodeNotFound {
		t.Fatalf("a stranger reads the image: %v", err)
	}

	ag, _ := e.st.Manager.Lookup(s.ID)
	evs := ag.Log().Events(0, ag.Log().Len())
	for base, want := range map[string]string{
		"/sessions/" + s.ID: "/sessions/" + s.ID + "/attachments/" + im.Attachment,
		"/s/tok":            "/s/tok/attachments/" + im.Attachment,
	} {
		tr := render.NewMarkdown().Fold(evs, render.FoldOptions{AttachmentBase: base})
		var card *render.ToolItem
		for _, it := range tr.Items {
			if ti, ok := it.(*render.ToolItem); ok {
				card = ti
			}
		}
		if card == nil || len(card.Images) != 1 || card.Images[0].URL != want {
			t.Fatalf("the card at %s: %+v", base, card)
		}
		var html strings.Builder
		if err := render.ToolView(card).Render(t.Context(), &html); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(html.String(), `<img src="`+want+`"`) || !strings.Contains(html.String(), `data-attachment="`+im.Attachment+`"`) {
			t.Fatalf("the card's HTML lacks the image:\n%s", html.String())
		}
	}
}
