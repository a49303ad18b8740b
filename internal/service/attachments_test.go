package service_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"strings"
	"testing"

	"harness/internal/auth"
	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/service"
	"harness/internal/testkit"
)

// upload stores data as an image of session id for a.
func (e *env) upload(a *auth.Actor, id, name string, data []byte) (service.AttachmentInfo, error) {
	return e.svc.UploadAttachment(e.t.Context(), a, id, name, bytes.NewReader(data))
}

func (e *env) mustUpload(a *auth.Actor, id, name string, data []byte) service.AttachmentInfo {
	e.t.Helper()
	info, err := e.upload(a, id, name, data)
	if err != nil {
		e.t.Fatalf("upload %s: %v", name, err)
	}
	return info
}

// guest is a share link's actor on session id.
func (e *env) guest(id string) *auth.Actor {
	e.t.Helper()
	l, err := e.svc.CreateShareLink(e.t.Context(), e.alice, id, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	g, err := e.app.Auth.ShareActor(e.t.Context(), l.Token)
	if err != nil {
		e.t.Fatal(err)
	}
	return g
}

func TestAttachmentAccess(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	s := e.shared(service.NewSession{})
	guest := e.guest(s.ID)
	img := testkit.PNG(t, 4, 3)
	cases := []struct {
		who        string
		a          *auth.Actor
		upload     service.Code
		read, send service.Code
	}{
		{"owner", e.alice, "", "", ""},
		{"collaborator", e.carol, "", "", ""},
		{"admin", e.root, "", "", ""},
		{"viewer", e.dave, service.CodeForbidden, "", service.CodeForbidden},
		{"share link", guest, service.CodeUnauthorized, "", service.CodeUnauthorized},
		{"stranger", e.bob, service.CodeNotFound, service.CodeNotFound, service.CodeNotFound},
	}
	stored := e.mustUpload(e.alice, s.ID, "a.png", img)
	for _, tc := range cases {
		_, err := e.upload(tc.a, s.ID, "x.png", img)
		wantCode(t, tc.who+" uploads", err, tc.upload)
		d, err := e.svc.Attachment(ctx, tc.a, s.ID, stored.ID)
		wantCode(t, tc.who+" reads", err, tc.read)
		if err == nil && !bytes.Equal(d.Data, img) {
			t.Errorf("%s read other bytes", tc.who)
		}
		_, err = e.svc.SendMessage(ctx, tc.a, s.ID, service.Message{Attachments: []string{stored.ID}})
		wantCode(t, tc.who+" sends the image", err, tc.send)
		e.idle(s.ID)
	}

	// An image of another session is not this session's, for reading or
	// sending; an unknown id is not found.
	other, err := e.svc.CreateSession(ctx, e.alice, service.NewSession{Provider: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.Attachment(ctx, e.alice, other.ID, stored.ID)
	wantCode(t, "read through another session", err, service.CodeNotFound)
	_, err = e.svc.SendMessage(ctx, e.alice, other.ID, service.Message{Content: "x", Attachments: []string{stored.ID}})
	wantCode(t, "send another session's image", err, service.CodeBadRequest)
	_, err = e.svc.Attachment(ctx, e.alice, s.ID, "no-such-id")
	wantCode(t, "unknown image", err, service.CodeNotFound)
}

func TestAttachmentChecks(t *testing.T) {
	t.Parallel()
	e := newEnvOn(t, testkit.StackOptions{AttachmentMax: 64 << 10})
	s := e.shared(service.NewSession{})
	pngB := testkit.PNG(t, 40, 30)
	var wide bytes.Buffer
	if err := png.Encode(&wide, image.NewGray(image.Rect(0, 0, service.MaxImageSide+1, 1))); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, file string
		data       []byte
		code       service.Code
		mediaType  string
		w, h       int
		msg        string
	}{
		{"png", "a.png", pngB, "", "image/png", 40, 30, ""},
		{"png named .jpg", "photo.jpg", pngB, "", "image/png", 40, 30, ""}, // stored as photo.png (TestSafeName)
		{"jpeg", "b.jpeg", testkit.JPEG(t, 20, 10), "", "image/jpeg", 20, 10, ""},
		{"gif", "c.gif", testkit.GIF(t, 5, 7), "", "image/gif", 5, 7, ""},
		{"webp", "d.webp", testkit.WebP(), "", "image/webp", testkit.WebPWidth, testkit.WebPHeight, ""},
		{"too large", "big.png", append(bytes.Clone(pngB), make([]byte, 64<<10)...), service.CodeTooLarge, "", 0, 0, "64 KiB"},
		{"bmp", "e.bmp", append([]byte("BM"), make([]byte, 64)...), service.CodeUnsupportedMedia, "", 0, 0, "image/bmp"},
		{"text", "notes.png", []byte("hello, this is text"), service.CodeUnsupportedMedia, "", 0, 0, "not an image"},
		{"pdf", "doc.png", []byte("%PDF-1.4\n..."), service.CodeUnsupportedMedia, "", 0, 0, "application/pdf"},
		{"damaged png", "broken.png", pngB[:20], service.CodeBadRequest, "", 0, 0, "cannot be read"},
		{"empty", "empty.png", nil, service.CodeBadRequest, "", 0, 0, "empty"},
		{"too wide", "wide.png", wide.Bytes(), service.CodeUnsupportedMedia, "", 0, 0, "at most 16384 pixels on a side"},
		{"a huge canvas in a small file", "bomb.png", testkit.PNGHeader(16384, 16384), service.CodeUnsupportedMedia, "", 0, 0, "the image is 16384 × 16384 (268 megapixels); at most 40 megapixels"},
		{"just over 40 megapixels", "tall.png", testkit.PNGHeader(4000, 10001), service.CodeUnsupportedMedia, "", 0, 0, "(40.0 megapixels)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			info, err := e.upload(e.alice, s.ID, tc.file, tc.data)
			wantCode(t, tc.name, err, tc.code)
			if err != nil {
				if !strings.Contains(err.(*service.Error).Message, tc.msg) {
					t.Errorf("message %q does not say %q", err.(*service.Error).Message, tc.msg)
				}
				return
			}
			if info.MediaType != tc.mediaType || info.Width != tc.w || info.Height != tc.h || info.Size != int64(len(tc.data)) || info.Name != service.SafeName(tc.file, tc.mediaType) || len(info.SHA256) != 64 {
				t.Errorf("info = %+v", info)
			}
		})
	}
}

func TestImagesReachTheModelAndStayReferences(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	s := e.shared(service.NewSession{})
	pngB, gifB := testkit.PNG(t, 64, 48), testkit.GIF(t, 5, 7)
	p := e.mustUpload(e.carol, s.ID, "shot.png", pngB)
	g := e.mustUpload(e.alice, s.ID, "anim.gif", gifB)
	if _, err := e.svc.SendMessage(ctx, e.carol, s.ID, service.Message{Content: "what are these?", Attachments: []string{p.ID, g.ID}}); err != nil {
		t.Fatal(err)
	}
	e.idle(s.ID)

	ag, ok := e.app.Manager.Lookup(s.ID)
	if !ok {
		t.Fatal("agent not loaded")
	}
	msgs := ag.Log().DeriveMessages()
	var user, answer llm.Message
	for _, m := range msgs {
		if m.Role == llm.RoleUser && m.Source.Kind == llm.SourceUser {
			user = m
		}
		if m.Role == llm.RoleAssistant {
			answer = m
		}
	}
	want := []llm.ContentBlock{llm.Text("what are these?"),
		llm.Image(p.ID, "image/png", int64(len(pngB)), 64, 48, "shot.png"),
		llm.Image(g.ID, "image/gif", int64(len(gifB)), 5, 7, "anim.gif")}
	if got, _ := json.Marshal(user.Content); string(got) != string(must(json.Marshal(want))) {
		t.Fatalf("user message content = %s", got)
	}
	for _, line := range []string{
		fmt.Sprintf("1. image/png, %d bytes, 64 x 48 pixels", len(pngB)),
		fmt.Sprintf("2. image/gif, %d bytes, 5 x 7 pixels", len(gifB)),
	} {
		if !strings.Contains(answer.Text(), line) {
			t.Errorf("the demo's answer lacks %q:\n%s", line, answer.Text())
		}
	}
	// The log holds references only: no event carries the bytes.
	page, err := e.svc.Events(ctx, e.alice, s.ID, -1, 0)
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString(pngB)
	for _, ev := range page.Events {
		if bytes.Contains(ev, []byte("data:image")) || bytes.Contains(ev, []byte(b64[:64])) {
			t.Errorf("an event holds image bytes: %.200s", ev)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestImagesRefusedBeforeQueuedOnATextRoute(t *testing.T) {
	t.Parallel()
	_, text := testkit.FakeRoute(t, fake.Script{Replies: []fake.Reply{{Text: "ok"}}}, testkit.RouteOptions{Name: "plain"})
	e := newEnvWith(t, text)
	ctx := t.Context()
	s := e.shared(service.NewSession{Provider: "plain"})
	img := e.mustUpload(e.alice, s.ID, "a.png", testkit.PNG(t, 2, 2))
	head := func() int64 {
		page, err := e.svc.Events(ctx, e.alice, s.ID, -1, 0)
		if err != nil {
			t.Fatal(err)
		}
		return page.Head
	}
	before := head()
	_, err := e.svc.SendMessage(ctx, e.alice, s.ID, service.Message{Content: "look", Attachments: []string{img.ID}})
	wantCode(t, "images to a text route", err, service.CodeUnsupportedContent)
	if err != nil && !strings.Contains(err.Error(), "plain") {
		t.Errorf("the refusal does not name the route: %v", err)
	}
	if got := head(); got != before {
		t.Errorf("the refused message changed the log: head %d → %d", before, got)
	}
	// Text still goes.
	e.run(e.alice, s.ID, "just text")
}

// A conversation that holds images goes on after a switch to a route
// without image input: that route gets a note in each image's place.
func TestImagesInHistoryBecomeNotesOnATextRoute(t *testing.T) {
	t.Parallel()
	srv, text := testkit.FakeRoute(t, fake.Script{Replies: []fake.Reply{{Text: "ok"}}}, testkit.RouteOptions{Name: "plain"})
	e := newEnvWith(t, text)
	ctx := t.Context()
	s := e.shared(service.NewSession{Provider: "demo"})
	img := e.mustUpload(e.alice, s.ID, "a.png", testkit.PNG(t, 2, 2))
	if _, err := e.svc.SendMessage(ctx, e.alice, s.ID, service.Message{Content: "look", Attachments: []string{img.ID}}); err != nil {
		t.Fatal(err)
	}
	e.idle(s.ID)
	if err := e.svc.SetModel(ctx, e.alice, s.ID, "plain", ""); err != nil {
		t.Fatal(err)
	}
	e.run(e.alice, s.ID, "and now?")
	reqs := srv.Requests()
	if len(reqs) == 0 {
		t.Fatal("the text route got no request")
	}
	raw := string(reqs[len(reqs)-1].Raw)
	if strings.Contains(raw, "image_url") || !strings.Contains(raw, "[image a.png: image/png, 2 x 2; not sent, this model does not take images]") {
		t.Fatalf("the text route's request: %s", raw)
	}
}

func TestForkAndDeleteCarryImages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	s := e.shared(service.NewSession{})
	img := testkit.PNG(t, 8, 8)
	a := e.mustUpload(e.alice, s.ID, "a.png", img)
	if _, err := e.svc.SendMessage(ctx, e.alice, s.ID, service.Message{Attachments: []string{a.ID}}); err != nil {
		t.Fatal(err)
	}
	e.idle(s.ID)
	child, err := e.svc.Fork(ctx, e.dave, s.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.svc.DeleteSession(ctx, e.alice, s.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.Attachment(ctx, e.alice, s.ID, a.ID)
	wantCode(t, "image of the deleted session", err, service.CodeNotFound)
	d, err := e.svc.Attachment(ctx, e.dave, child.ID, a.ID)
	if err != nil || !bytes.Equal(d.Data, img) {
		t.Fatalf("the fork's image: %v", err)
	}
	// The fork's model still gets the image (the demo describes it).
	e.run(e.dave, child.ID, "and now?")
	if _, err := e.svc.SendMessage(ctx, e.dave, child.ID, service.Message{Content: "again", Attachments: []string{a.ID}}); err != nil {
		t.Fatalf("send the fork's copy: %v", err)
	}
	e.idle(child.ID)
}

// TestImportBringsReadableImages: an export holds image references; an
// import on the same server copies the images the importer may read, and
// leaves the others unavailable.
func TestImportBringsReadableImages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	s := e.shared(service.NewSession{})
	img := testkit.PNG(t, 3, 3)
	a := e.mustUpload(e.alice, s.ID, "a.png", img)
	if _, err := e.svc.SendMessage(ctx, e.alice, s.ID, service.Message{Content: "see", Attachments: []string{a.ID}}); err != nil {
		t.Fatal(err)
	}
	e.idle(s.ID)
	var export bytes.Buffer
	if err := e.svc.Export(ctx, e.alice, s.ID, &export); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		who  string
		a    *auth.Actor
		want service.Code
	}{{"a reader (viewer)", e.dave, ""}, {"a stranger", e.bob, service.CodeNotFound}} {
		imported, err := e.svc.Import(ctx, tc.a, bytes.NewReader(export.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		d, err := e.svc.Attachment(ctx, tc.a, imported.ID, a.ID)
		wantCode(t, tc.who+" reads the imported image", err, tc.want)
		if err == nil && !bytes.Equal(d.Data, img) {
			t.Errorf("%s: other bytes", tc.who)
		}
	}
}
