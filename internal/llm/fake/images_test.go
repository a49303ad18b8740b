package fake

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"os"
	"strings"
	"testing"

	"harness/internal/llm"
)

// store is a session's attachments for the adapter.
type store map[string]llm.Attachment

func (s store) ReadAttachment(_ context.Context, _, id string) (llm.Attachment, error) {
	if a, ok := s[id]; ok {
		return a, nil
	}
	return llm.Attachment{}, llm.ErrAttachmentNotFound
}

func TestDemoDescribesImages(t *testing.T) {
	t.Parallel()
	p := startDemo(t)
	rgba := image.NewRGBA(image.Rect(0, 0, 64, 48))
	var pngB, jpgB, gifB bytes.Buffer
	if err := png.Encode(&pngB, rgba); err != nil {
		t.Fatal(err)
	}
	if err := jpeg.Encode(&jpgB, image.NewRGBA(image.Rect(0, 0, 20, 10)), nil); err != nil {
		t.Fatal(err)
	}
	if err := gif.Encode(&gifB, image.NewPaletted(image.Rect(0, 0, 5, 7), color.Palette{color.Black, color.White}), nil); err != nil {
		t.Fatal(err)
	}
	webpB, err := os.ReadFile("testdata/gopher.webp")
	if err != nil {
		t.Fatal(err)
	}
	imgs := []struct {
		id, mt string
		data   []byte
		want   string
	}{
		{"p", "image/png", pngB.Bytes(), fmt.Sprintf("image/png, %d bytes, 64 x 48 pixels", pngB.Len())},
		{"j", "image/jpeg", jpgB.Bytes(), fmt.Sprintf("image/jpeg, %d bytes, 20 x 10 pixels", jpgB.Len())},
		{"g", "image/gif", gifB.Bytes(), fmt.Sprintf("image/gif, %d bytes, 5 x 7 pixels", gifB.Len())},
		{"w", "image/webp", webpB, fmt.Sprintf("image/webp, %d bytes, 75 x 100 pixels", len(webpB))},
	}
	st := store{}
	content := []llm.ContentBlock{llm.Text("what are these?")}
	for _, im := range imgs {
		st[im.id] = llm.Attachment{MediaType: im.mt, Data: im.data}
		content = append(content, llm.Image(im.id, im.mt, int64(len(im.data)), 0, 0, ""))
	}
	msg := llm.Message{ID: "m", Role: llm.RoleUser, Content: content, Source: llm.Source{Kind: llm.SourceUser}}
	text := modelMsg(turn(t, p, llm.Request{Messages: []llm.Message{msg}, Attachments: st})).Text()
	if !strings.Contains(text, "4 images") || !strings.Contains(text, "> what are these?") {
		t.Fatalf("answer = %q", text)
	}
	for i, im := range imgs {
		if line := fmt.Sprintf("%d. %s\n", i+1, im.want); !strings.Contains(text, line) {
			t.Errorf("answer lacks %q:\n%s", line, text)
		}
	}
}
