package fake

import (
	"bytes"
	"fmt"
	"image"
	_ "image/gif" // decoders DecodeConfig picks from the bytes
	_ "image/jpeg"
	_ "image/png"
	"net/http"
	"strings"

	_ "golang.org/x/image/webp"
)

// describeImages answers a user message with images: what the demo model
// received of each, read from the bytes themselves (the type sniffed from
// them, their size, the pixel dimensions their header gives), then the
// message's text quoted, if any. It shows an image made the whole way from
// the composer to the model's request.
func (d demo) describeImages(t demoTurn, m WireMessage) Reply {
	var sb strings.Builder
	if len(m.Images) == 1 {
		sb.WriteString("I received **1 image**:\n\n")
	} else {
		fmt.Fprintf(&sb, "I received **%d images**:\n\n", len(m.Images))
	}
	for i, img := range m.Images {
		fmt.Fprintf(&sb, "%d. %s\n", i+1, describeImage(img))
	}
	if text := strings.TrimSpace(m.Text()); text != "" {
		sb.WriteString("\nYou wrote:\n\n" + quote(text) + "\n")
	}
	sb.WriteString("\nThis is the **offline demo model**: it reads the images' headers, not what they show.")
	reasoning := fmt.Sprintf("The message has %d image(s); I'll describe what I can read from their bytes.", len(m.Images))
	return d.finish(t, reasoning, sb.String(), nil)
}

// describeImage is one line about one image part: "image/png, 1234 bytes,
// 64 x 48 pixels".
func describeImage(img WireImage) string {
	if img.Data == nil {
		return "an image by URL, not inline data: `" + oneLineMax(img.URL, 80) + "`"
	}
	sniffed := http.DetectContentType(img.Data)
	line := fmt.Sprintf("%s, %d bytes", sniffed, len(img.Data))
	if cfg, _, err := image.DecodeConfig(bytes.NewReader(img.Data)); err == nil {
		line += fmt.Sprintf(", %d x %d pixels", cfg.Width, cfg.Height)
	} else {
		line += ", dimensions unreadable"
	}
	if img.MediaType != sniffed {
		line += " (sent as " + img.MediaType + ")"
	}
	return line
}
