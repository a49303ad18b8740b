package service

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"golang.org/x/image/webp"

	"harness/internal/auth"
	"harness/internal/llm"
	"harness/internal/models"
	"harness/internal/session"
	"harness/internal/tools"
)

// Attachment limits.
const (
	// DefaultAttachmentMax caps one image when Deps.AttachmentMax is 0.
	DefaultAttachmentMax = 10 << 20
	// MaxImagesPerMessage bounds the images of one message.
	MaxImagesPerMessage = 10
	// MaxImagePixels bounds an image's canvas (width x height): a small
	// file can declare a huge one, which every viewer's browser and the
	// model would have to decode (40 megapixels is 160 MB as RGBA).
	MaxImagePixels = 40_000_000
	// MaxImageSide bounds each side as well: within the pixel budget a
	// 1 x 40,000,000 strip is no picture anyone can look at, and browsers
	// and models refuse sides far shorter.
	MaxImageSide = 16384
)

// decoders read the pixel dimensions of the accepted types. The type is
// sniffed from the bytes (http.DetectContentType), never taken from the
// file's name or the upload's Content-Type, and the image's header must
// then decode as that type.
var decoders = map[string]func(io.Reader) (image.Config, error){
	"image/png":  png.DecodeConfig,
	"image/jpeg": jpeg.DecodeConfig,
	"image/gif":  gif.DecodeConfig,
	"image/webp": webp.DecodeConfig,
}

// AttachmentInfo is a stored image as clients see it (no bytes).
type AttachmentInfo struct {
	ID        string    `json:"id"`
	Session   string    `json:"session"`
	Name      string    `json:"name,omitempty"`
	MediaType string    `json:"mediaType"`
	Size      int64     `json:"size"`
	Width     int       `json:"width"`
	Height    int       `json:"height"`
	SHA256    string    `json:"sha256"`
	CreatedAt time.Time `json:"createdAt"`
}

// AttachmentData is an attachment with its bytes, for serving it.
type AttachmentData struct {
	AttachmentInfo
	Data []byte `json:"-"`
}

func attachmentInfo(a *models.Attachment) AttachmentInfo {
	// Rows stored before names were made safe are made safe here.
	return AttachmentInfo{ID: a.ID, Session: a.SessionID, Name: SafeName(a.Name, a.MediaType), MediaType: a.MediaType, Size: a.Size,
		Width: a.Width, Height: a.Height, SHA256: a.SHA256, CreatedAt: a.CreatedAt.UTC()}
}

// AttachmentMax is the size cap of one image, in bytes.
func (s *Service) AttachmentMax() int64 { return s.attachMax }

// UploadAttachment stores an image for session id, to be sent with a later
// message (Message.Attachments). Whoever may send to the session may
// upload (owner, collaborator, admin); viewers are forbidden and share
// links unauthorized. The type is sniffed from the bytes; PNG, JPEG, GIF
// and WebP are accepted, up to AttachmentMax bytes, MaxImagePixels and
// MaxImageSide pixels on a side. name is the file's name, kept for the
// transcript as SafeName makes it (its extension the sniffed type's).
func (s *Service) UploadAttachment(ctx context.Context, a *auth.Actor, id, name string, r io.Reader) (AttachmentInfo, error) {
	if _, err := s.Authorize(ctx, a, id, auth.ActionWrite); err != nil {
		return AttachmentInfo{}, err
	}
	data, err := io.ReadAll(io.LimitReader(r, s.attachMax+1))
	if err != nil {
		if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok && mbe.Limit > 0 {
			return AttachmentInfo{}, s.tooLarge()
		}
		return AttachmentInfo{}, wrap(CodeBadRequest, "the upload could not be read", err)
	}
	if int64(len(data)) > s.attachMax {
		return AttachmentInfo{}, s.tooLarge()
	}
	mt, cfg, err := probeImage(data)
	if err != nil {
		return AttachmentInfo{}, err
	}
	sum := sha256.Sum256(data)
	row := &models.Attachment{
		SessionID: id, ID: uuid.NewString(), UploaderID: a.UserID, Name: SafeName(name, mt),
		MediaType: mt, Size: int64(len(data)), Width: cfg.Width, Height: cfg.Height,
		SHA256: hex.EncodeToString(sum[:]), Data: data,
	}
	if err := s.store.CreateAttachment(ctx, row); err != nil {
		return AttachmentInfo{}, s.fail(ctx, "store attachment", err)
	}
	s.log.InfoContext(ctx, "attachment stored", "session", id, "attachment", row.ID, "type", mt, "bytes", row.Size, "by", a.UserID)
	return attachmentInfo(row), nil
}

// StoreResultImage keeps an image a tool produced for session id (an MCP
// server's image content) as an attachment of the session, so the
// transcript can show it; it is checked like an upload (type sniffed from
// the bytes, the size and pixel caps). Tools run for the session, so no
// actor is asked: app wires it to the MCP manager, never to an edge.
func (s *Service) StoreResultImage(ctx context.Context, id string, data []byte) (tools.MetaImage, error) {
	if int64(len(data)) > s.attachMax {
		return tools.MetaImage{}, s.tooLarge()
	}
	mt, cfg, err := probeImage(data)
	if err != nil {
		return tools.MetaImage{}, err
	}
	sum := sha256.Sum256(data)
	row := &models.Attachment{
		SessionID: id, ID: uuid.NewString(), MediaType: mt, Size: int64(len(data)), Width: cfg.Width, Height: cfg.Height,
		SHA256: hex.EncodeToString(sum[:]), Data: data,
	}
	if err := s.store.CreateAttachment(ctx, row); err != nil {
		return tools.MetaImage{}, s.fail(ctx, "store a tool's image", err)
	}
	return tools.MetaImage{Attachment: row.ID, MediaType: mt, Size: row.Size, Width: cfg.Width, Height: cfg.Height}, nil
}

func (s *Service) tooLarge() *Error {
	return Errorf(CodeTooLarge, "the image is larger than %s (the limit of one image)", sizeText(s.attachMax))
}

// probeImage sniffs data's type and reads its dimensions. Refusals: not an
// image at all, or an image type other than the four (unsupported media
// type); a file whose header does not decode as its type (bad request);
// a canvas over MaxImagePixels or MaxImageSide (unsupported media type:
// the bytes may be few). Only the header is decoded.
func probeImage(data []byte) (string, image.Config, error) {
	if len(data) == 0 {
		return "", image.Config{}, Errorf(CodeBadRequest, "the file is empty")
	}
	sniffed := http.DetectContentType(data)
	mt, _, _ := strings.Cut(sniffed, ";")
	decode, ok := decoders[mt]
	switch {
	case !ok && strings.HasPrefix(mt, "image/"):
		return "", image.Config{}, Errorf(CodeUnsupportedMedia, "images of type %s are not supported: use PNG, JPEG, GIF or WebP", mt)
	case !ok:
		return "", image.Config{}, Errorf(CodeUnsupportedMedia, "the file is not an image (its content is %s): use PNG, JPEG, GIF or WebP", mt)
	}
	cfg, err := decode(bytes.NewReader(data))
	if err != nil {
		return "", image.Config{}, wrap(CodeBadRequest, "the file looks like "+mt+" but cannot be read as one (damaged or incomplete)", err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return "", image.Config{}, Errorf(CodeBadRequest, "the image has no pixels (%d x %d)", cfg.Width, cfg.Height)
	}
	if px := int64(cfg.Width) * int64(cfg.Height); px > MaxImagePixels {
		return "", image.Config{}, Errorf(CodeUnsupportedMedia, "the image is %d × %d (%s megapixels); at most %d megapixels",
			cfg.Width, cfg.Height, megapixels(px), MaxImagePixels/1_000_000)
	}
	if cfg.Width > MaxImageSide || cfg.Height > MaxImageSide {
		return "", image.Config{}, Errorf(CodeUnsupportedMedia, "the image is %d × %d: at most %d pixels on a side", cfg.Width, cfg.Height, MaxImageSide)
	}
	return mt, cfg, nil
}

// Attachment returns a stored image of session id, for anyone who may read
// the session (share links too). An id the session does not hold is
// not_found, as is a session the actor may not read.
func (s *Service) Attachment(ctx context.Context, a *auth.Actor, id, attachment string) (AttachmentData, error) {
	if _, err := s.Authorize(ctx, a, id, auth.ActionRead); err != nil {
		return AttachmentData{}, err
	}
	if attachment == "" {
		return AttachmentData{}, Errorf(CodeNotFound, "no such image")
	}
	row, err := s.store.AttachmentData(ctx, id, attachment)
	if isNotFound(err) {
		return AttachmentData{}, Errorf(CodeNotFound, "no such image in this session")
	}
	if err != nil {
		return AttachmentData{}, s.fail(ctx, "read attachment", err)
	}
	return AttachmentData{AttachmentInfo: attachmentInfo(row), Data: row.Data}, nil
}

// imageBlocks turns the attachment ids of a message into image blocks, in
// order; every id must be an image stored for the session.
func (s *Service) imageBlocks(ctx context.Context, id string, ids []string) ([]llm.ContentBlock, error) {
	if len(ids) > MaxImagesPerMessage {
		return nil, Errorf(CodeBadRequest, "a message takes at most %d images", MaxImagesPerMessage)
	}
	out := make([]llm.ContentBlock, 0, len(ids))
	for _, aid := range ids {
		if aid == "" || len(aid) > 64 {
			return nil, Errorf(CodeBadRequest, "an attachment id is empty or too long")
		}
		row, err := s.store.AttachmentMeta(ctx, id, aid)
		if isNotFound(err) {
			return nil, Errorf(CodeBadRequest, "attachment %s is not an image of this session (upload it first)", aid)
		}
		if err != nil {
			return nil, s.fail(ctx, "read attachment", err)
		}
		out = append(out, llm.Image(row.ID, row.MediaType, row.Size, row.Width, row.Height, SafeName(row.Name, row.MediaType)))
	}
	return out, nil
}

// checkImages refuses a message with images when the session's route does
// not take images, before it is queued, so nothing is lost. Images already
// in the history do not stop a conversation that switched to such a route:
// the adapter sends a note in each one's place.
func checkImages(route llm.ProviderInfo, newImages bool) error {
	if route.ImageInput || !newImages {
		return nil
	}
	return Errorf(CodeUnsupportedContent, "model route %s does not accept images: switch to a route that takes images, or send text only", route.Name)
}

// attachmentIDs are the ids of the images the seed's messages refer to.
func attachmentIDs(msgs []llm.Message) []string {
	var ids []string
	seen := map[string]bool{}
	for _, m := range msgs {
		for _, b := range m.Images() {
			if !seen[b.Attachment] {
				seen[b.Attachment] = true
				ids = append(ids, b.Attachment)
			}
		}
	}
	return ids
}

// megapixels writes a pixel count in millions: "268", or "40.3" below 100.
func megapixels(px int64) string {
	if px >= 100_000_000 {
		return fmt.Sprint((px + 500_000) / 1_000_000)
	}
	return fmt.Sprintf("%.1f", float64(px)/1e6)
}

// sizeText writes a byte count for people: "10 MiB", "512 KiB", "900 bytes".
func sizeText(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// importImages copies into an imported session the images its log refers
// to that the importer may read in other sessions of this server (an
// export holds references, not bytes: exporting and importing on one
// server keeps the images the person could see). Images it cannot find
// stay unavailable: the transcript shows their text alternative and the
// model gets a note in their place. Failures are logged, not fatal.
func (s *Service) importImages(ctx context.Context, a *auth.Actor, id string, events []session.Event) {
	// One message decoded at a time: a log's messages may add up to the
	// import cap.
	var ids []string
	for _, ev := range events {
		if ev.Type != session.TypeUserMessage {
			continue
		}
		if m, err := session.Decode[llm.Message](ev); err == nil {
			ids = append(ids, attachmentIDs([]llm.Message{m})...)
		}
	}
	if len(ids) == 0 {
		return
	}
	found, err := s.store.AttachmentsByID(ctx, ids)
	if err != nil {
		s.log.ErrorContext(ctx, "import: find images", "session", id, "err", err)
		return
	}
	copied := map[string]bool{}
	for _, f := range found {
		if copied[f.ID] || f.SessionID == id {
			continue
		}
		if _, err := s.auth.Authorize(ctx, a, f.SessionID, auth.ActionRead); err != nil {
			continue
		}
		if err := s.store.CopyAttachments(ctx, f.SessionID, id, []string{f.ID}); err != nil {
			s.log.ErrorContext(ctx, "import: copy an image", "session", id, "attachment", f.ID, "err", err)
			continue
		}
		copied[f.ID] = true
	}
	s.log.InfoContext(ctx, "import: images", "session", id, "referred", len(ids), "copied", len(copied))
}
