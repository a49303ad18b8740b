package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// Attachment is an image stored for a session (docs/protocol.md, REST).
type Attachment struct {
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

// UploadImage stores an image (PNG, JPEG, GIF or WebP, judged by its
// bytes) for session id, to send with SendImages.
func (c *Client) UploadImage(ctx context.Context, id, name string, data []byte) (Attachment, error) {
	path := sessionPath(id, "attachments") + "?name=" + url.QueryEscape(name)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(data))
	if err != nil {
		return Attachment{}, err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("Accept", "application/json")
	c.authorize(req)
	res, err := c.http.Do(req)
	if err != nil {
		return Attachment{}, fmt.Errorf("POST %s: %w", path, err)
	}
	defer res.Body.Close()
	if res.StatusCode/100 != 2 {
		return Attachment{}, decodeError(res)
	}
	var out Attachment
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		return Attachment{}, fmt.Errorf("POST %s: decode answer: %w", path, err)
	}
	return out, nil
}

// SendImages is SendMessage with images uploaded before (UploadImage), sent
// after the text in this order; the text may be empty.
func (c *Client) SendImages(ctx context.Context, id, content, mode string, attachments []string) (string, error) {
	var out struct {
		ID string `json:"id"`
	}
	in := struct {
		Content     string   `json:"content"`
		Mode        string   `json:"mode,omitempty"`
		Attachments []string `json:"attachments"`
	}{content, mode, attachments}
	err := c.do(ctx, http.MethodPost, sessionPath(id, "messages"), in, &out)
	return out.ID, err
}
