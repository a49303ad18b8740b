package app_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"harness/client"
	"harness/internal/app"
	"harness/internal/config"
	"harness/internal/testkit"
	"harness/internal/testkit/apptest"
)

// TestImagesThroughTheApp: the public client uploads an image to the whole
// app on loopback and sends it; the log's user/message holds the image
// block (a reference), and the demo model behind the real adapter got the
// bytes, read from the store by the app's wiring, and describes them. The
// configured cap refuses a larger image.
func TestImagesThroughTheApp(t *testing.T) {
	t.Parallel()
	a := apptest.StartApp(t, func(c *config.Config) { c.AttachmentMax = 4 << 10 }, app.Options{VerifyRequests: true})
	ada := a.User(t, "ada", false)
	ctx := t.Context()
	s, err := ada.Client.CreateSession(ctx, client.NewSession{})
	if err != nil {
		t.Fatal(err)
	}
	img := testkit.PNG(t, 12, 9)
	att, err := ada.Client.UploadImage(ctx, s.ID, "tiny.png", img)
	if err != nil || att.MediaType != "image/png" || att.Width != 12 || att.Height != 9 {
		t.Fatalf("upload: %+v, %v", att, err)
	}
	if _, err := ada.Client.UploadImage(ctx, s.ID, "big.png", append(testkit.PNG(t, 2, 2), make([]byte, 8<<10)...)); err == nil || !strings.Contains(err.Error(), "too_large") {
		t.Errorf("an image over the cap: %v", err)
	}
	if _, err := ada.Client.SendImages(ctx, s.ID, "", "", []string{att.ID}); err != nil {
		t.Fatal(err)
	}
	a.WaitIdle(t, s.ID)
	page, err := ada.Client.Events(ctx, s.ID, -1, 0)
	if err != nil {
		t.Fatal(err)
	}
	var sawImage bool
	var answer string
	for _, ev := range page.Events {
		switch ev.Type {
		case "user/message":
			if !json.Valid(ev.Data) {
				t.Fatalf("user/message data %s", ev.Data)
			}
			sawImage = sawImage || strings.Contains(string(ev.Data), `"attachment":"`+att.ID+`"`)
		case "assistant/message":
			answer = string(ev.Data)
		}
	}
	if !sawImage {
		t.Error("no user/message refers to the image")
	}
	if want := fmt.Sprintf("image/png, %d bytes, 12 x 9 pixels", len(img)); !strings.Contains(answer, want) {
		t.Errorf("the answer lacks %q: %s", want, answer)
	}
}
