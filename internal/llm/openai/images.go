package openai

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"harness/internal/llm"
)

// Images travel as OpenAI-compatible content parts: a user message with
// images has `content: [{"type":"text",…}, {"type":"image_url",
// "image_url":{"url":"data:<type>;base64,…"}}]`. The log holds only the
// attachment's id, and the history's encodings are cached for the
// session's life (the log's wire cache), so encodeMessage writes a
// placeholder part per image,
//
//	{"type":"image_url","image_url":{"url":"harness-attachment:<id>"}}
//
// and each request reads the bytes by id (llm.Request.Attachments) and
// sends the data URL in the placeholder's place (wirePatch.apply). The
// placeholder cannot occur in text the encoder wrote: inside a JSON string
// every quote is escaped, and the placeholder has unescaped ones.

// placeholderPrefix opens an image placeholder part; the id and
// placeholderSuffix follow.
const (
	placeholderPrefix = `{"type":"image_url","image_url":{"url":"harness-attachment:`
	placeholderSuffix = `"}}`
)

// imageMediaTypes are the media types a data URL may carry.
var imageMediaTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// checkImages refuses a message the route cannot carry: images inside tool
// results (the wire has no image tool content) and attachment ids that are
// not plain tokens. A route without image input gets a note in the
// message's text for each image instead (imageNotes): a conversation that
// holds images goes on after a switch to such a route, and the service
// refuses new images for it before they are queued.
func (p *Provider) checkImages(m llm.Message) *llm.Failure {
	for _, b := range m.Content {
		switch b.Type {
		case llm.BlockImage:
			if p.cfg.ImageInput && !plainID(b.Attachment) {
				return llm.Errorf(llm.CodeUnsupportedContent, "image attachment id %q is not a plain id", b.Attachment)
			}
		case llm.BlockToolResult:
			for _, c := range b.Content {
				if c.Type == llm.BlockImage {
					return llm.Errorf(llm.CodeUnsupportedContent, "images in tool results are not supported")
				}
			}
		}
	}
	return nil
}

// imageNotes is what a route without image input gets of a message's
// images: a line for each, after the text.
func imageNotes(m llm.Message) string {
	var sb strings.Builder
	for _, b := range m.Images() {
		if sb.Len() > 0 || joinText(m.Content, llm.BlockText) != "" {
			sb.WriteByte('\n')
		}
		sb.WriteString("[image")
		if b.Name != "" {
			sb.WriteString(" " + b.Name)
		}
		fmt.Fprintf(&sb, ": %s, %d x %d; not sent, this model does not take images]", b.MediaType, b.Width, b.Height)
	}
	return sb.String()
}

// plainID: letters, digits, '-' and '_' (uuids), at most 64 bytes, so the
// id is the same inside and outside a JSON string.
func plainID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// encodeParts writes m's user content as parts: its text (when any), then
// a placeholder per image, in block order.
func encodeParts(enc *json.Encoder, buf *bytes.Buffer, m llm.Message) error {
	type textPart struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	buf.WriteString(`{"role":"user","content":[`)
	n := 0
	if text := joinText(m.Content, llm.BlockText); text != "" {
		if err := enc.Encode(textPart{Type: "text", Text: text}); err != nil {
			return err
		}
		buf.Truncate(buf.Len() - 1)
		n++
	}
	for _, b := range m.Content {
		if b.Type != llm.BlockImage {
			continue
		}
		if n > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString(placeholderPrefix + b.Attachment + placeholderSuffix)
		n++
	}
	buf.WriteString("]}\n") // the caller drops the newline, as after Encode
	return nil
}

// readImages reads the bytes of every image the request's messages refer
// to and returns the part that replaces each placeholder. An attachment
// the session does not hold (an imported log keeps references only) and a
// request without a reader (a compaction summary) get a text part saying
// so; a read that fails otherwise fails the request.
func (p *Provider) readImages(ctx context.Context, req llm.Request) (map[string][]byte, *llm.Failure) {
	if !p.cfg.ImageInput {
		return nil, nil // the messages carry notes, no placeholders
	}
	var out map[string][]byte
	for _, m := range req.Messages {
		if m.Role != llm.RoleUser {
			continue
		}
		for _, b := range m.Content {
			if b.Type != llm.BlockImage || out[b.Attachment] != nil {
				continue
			}
			if out == nil {
				out = map[string][]byte{}
			}
			part, f := p.imagePart(ctx, req, b)
			if f != nil {
				return nil, f
			}
			out[b.Attachment] = part
		}
	}
	return out, nil
}

func (p *Provider) imagePart(ctx context.Context, req llm.Request, b llm.ContentBlock) ([]byte, *llm.Failure) {
	unavailable := func(why string) []byte {
		part, _ := json.Marshal(struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}{"text", "[image " + b.Attachment + " not available: " + why + "]"})
		return part
	}
	if req.Attachments == nil {
		return unavailable("not included in this request"), nil
	}
	a, err := req.Attachments.ReadAttachment(ctx, req.SessionID, b.Attachment)
	if errors.Is(err, llm.ErrAttachmentNotFound) {
		return unavailable("this session holds no such image"), nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, &llm.Failure{Code: llm.CodeAborted, Message: "request cancelled while reading an image"}
		}
		return nil, llm.Errorf(llm.CodeInvalidRequest, "read image attachment %s: %v", b.Attachment, err)
	}
	if !imageMediaTypes[a.MediaType] {
		return nil, llm.Errorf(llm.CodeUnsupportedContent, "image attachment %s has unsupported type %q", b.Attachment, a.MediaType)
	}
	enc := base64.StdEncoding
	var buf bytes.Buffer
	buf.Grow(len(`{"type":"image_url","image_url":{"url":"data:;base64,"}}`) + len(a.MediaType) + enc.EncodedLen(len(a.Data)))
	fmt.Fprintf(&buf, `{"type":"image_url","image_url":{"url":"data:%s;base64,`, a.MediaType)
	w := base64.NewEncoder(enc, &buf)
	_, _ = w.Write(a.Data)
	_ = w.Close()
	buf.WriteString(`"}}`)
	return buf.Bytes(), nil
}

// appendExpanded appends seg to parts with every image placeholder
// replaced by its part in images; a placeholder without one (none: the
// ids come from the same messages) is left as it is.
func appendExpanded(parts [][]byte, seg []byte, images map[string][]byte) [][]byte {
	if len(images) == 0 {
		return append(parts, seg)
	}
	prefix := []byte(placeholderPrefix)
	for {
		at := bytes.Index(seg, prefix)
		if at < 0 {
			return append(parts, seg)
		}
		rest := seg[at+len(prefix):]
		end := bytes.Index(rest, []byte(placeholderSuffix))
		if end < 0 {
			return append(parts, seg)
		}
		part, ok := images[string(rest[:end])]
		if !ok {
			parts = append(parts, seg[:at+len(prefix)])
			seg = rest
			continue
		}
		parts = append(parts, seg[:at], part)
		seg = rest[end+len(placeholderSuffix):]
	}
}
