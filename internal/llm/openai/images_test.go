package openai_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"strings"
	"sync"
	"testing"

	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/llm/openai"
)

// pngBytes encodes a w x h PNG.
func pngBytes(t testing.TB, w, h int) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewRGBA(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// attachments is a session's stored images by id.
type attachments map[string]llm.Attachment

func (a attachments) ReadAttachment(_ context.Context, _, id string) (llm.Attachment, error) {
	if at, ok := a[id]; ok {
		return at, nil
	}
	return llm.Attachment{}, fmt.Errorf("attachment %s: %w", id, llm.ErrAttachmentNotFound)
}

// cache is a WireCache that keeps each message's encoding, as the log's does.
type cache struct {
	mu   sync.Mutex
	msgs []llm.Message
	enc  map[string][]byte
}

func (c *cache) Encoded(variant string, encode func(llm.Message) ([]byte, error)) ([][]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out [][]byte
	for _, m := range c.msgs {
		key := variant + "/" + m.ID
		b, ok := c.enc[key]
		if !ok {
			var err error
			if b, err = encode(m); err != nil {
				return nil, err
			}
			c.enc[key] = b
		}
		out = append(out, b)
	}
	return out, nil
}

func imageRoute(on bool) func(*openai.Config) {
	return func(c *openai.Config) { c.Name, c.ImageInput = "vision", on }
}

// wireParts decodes the content parts of the request's first user message.
func wireParts(t *testing.T, rec fake.Recorded) []map[string]any {
	t.Helper()
	var body struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(rec.Raw, &body); err != nil {
		t.Fatal(err)
	}
	for _, m := range body.Messages {
		if m.Role != "user" {
			continue
		}
		var parts []map[string]any
		if err := json.Unmarshal(m.Content, &parts); err != nil {
			t.Fatalf("user content is not parts: %s", m.Content)
		}
		return parts
	}
	t.Fatal("no user message")
	return nil
}

func TestImagesSentAsContentParts(t *testing.T) {
	t.Parallel()
	img := pngBytes(t, 3, 2)
	srv, p := serve(t, []fake.Reply{{Text: "one"}, {Text: "two"}}, imageRoute(true))
	msg := llm.Message{ID: "m1", Role: llm.RoleUser, Source: llm.Source{Kind: llm.SourceUser}, Content: []llm.ContentBlock{
		llm.Text("what is this?"), llm.Image("a-1", "image/png", int64(len(img)), 3, 2, "x.png"),
	}}
	wc := &cache{msgs: []llm.Message{msg}, enc: map[string][]byte{}}
	req := llm.Request{Messages: wc.msgs, Wire: wc, SessionID: "s1", Attachments: attachments{"a-1": {MediaType: "image/png", Data: img}}}
	for i := range 2 { // the second request is built from the cached encoding
		if r := stream(t, p, req); r.err != nil {
			t.Fatalf("request %d: %v", i, r.err)
		}
	}
	recs := srv.WaitRequests(2)
	want := "data:image/png;base64," + base64.StdEncoding.EncodeToString(img)
	for i, rec := range recs {
		parts := wireParts(t, rec)
		if len(parts) != 2 || parts[0]["type"] != "text" || parts[0]["text"] != "what is this?" || parts[1]["type"] != "image_url" {
			t.Fatalf("request %d parts = %v", i, parts)
		}
		if got := parts[1]["image_url"].(map[string]any)["url"]; got != want {
			t.Fatalf("request %d image url = %.60v…, want %.60v…", i, got, want)
		}
		// The demo side reads the same bytes back.
		if m := rec.Messages()[0]; len(m.Images) != 1 || !bytes.Equal(m.Images[0].Data, img) || m.Images[0].MediaType != "image/png" {
			t.Fatalf("fake's view of the image = %+v", m.Images)
		}
	}
	for k, b := range wc.enc {
		if bytes.Contains(b, []byte("base64")) || !bytes.Contains(b, []byte("harness-attachment:a-1")) {
			t.Fatalf("cached encoding %s holds the bytes or no placeholder: %s", k, b)
		}
	}
}

// A route without image input gets a note in the message's text for each
// image, never a part or the bytes, so a conversation holding images goes
// on after a switch to such a route (the service refuses new images for
// it); nothing is read.
func TestImagesOnATextRouteAreNotes(t *testing.T) {
	t.Parallel()
	srv, p := serve(t, []fake.Reply{{Text: "ok"}}, imageRoute(false))
	req := llm.Request{Messages: []llm.Message{{ID: "m1", Role: llm.RoleUser, Source: llm.Source{Kind: llm.SourceUser},
		Content: []llm.ContentBlock{llm.Text("look"), llm.Image("a-1", "image/png", 10, 3, 2, "shot.png")}}}, Attachments: attachments{}}
	if f := stream(t, p, req).failure(t); f != nil {
		t.Fatalf("failure %+v", f)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	body := string(reqs[0].Raw)
	if strings.Contains(body, "image_url") || strings.Contains(body, "harness-attachment") {
		t.Fatalf("the text route got an image part: %s", body)
	}
	if m := reqs[0].Messages(); len(m) != 1 || m[0].Text() != "look\n[image shot.png: image/png, 3 x 2; not sent, this model does not take images]" {
		t.Fatalf("messages %+v", m)
	}
}

func TestImageUnavailableBecomesText(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		reader llm.AttachmentReader
		want   string
	}{
		{"missing", attachments{}, "this session holds no such image"},
		{"no reader", nil, "not included in this request"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, p := serve(t, []fake.Reply{{Text: "ok"}}, imageRoute(true))
			req := llm.Request{Messages: []llm.Message{{ID: "m1", Role: llm.RoleUser, Source: llm.Source{Kind: llm.SourceUser},
				Content: []llm.ContentBlock{llm.Image("gone", "image/png", 10, 1, 1, "")}}}}
			if tc.reader != nil {
				req.Attachments = tc.reader
			}
			if r := stream(t, p, req); r.err != nil {
				t.Fatal(r.err)
			}
			parts := wireParts(t, srv.WaitRequests(1)[0])
			if len(parts) != 1 || parts[0]["type"] != "text" || !strings.Contains(parts[0]["text"].(string), tc.want) {
				t.Fatalf("parts = %v", parts)
			}
		})
	}
}
