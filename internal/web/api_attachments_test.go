package web

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"harness/internal/testkit"
)

// multipartBody is an upload of data as the form field "file" named name.
func multipartBody(t *testing.T, name string, data []byte) (io.Reader, string) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	fw, err := w.CreateFormFile("file", name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf, w.FormDataContentType()
}

// uploadRow sends the row's request (its URL and the actor's credentials)
// with a multipart image.
func uploadRow(data []byte) func(t *testing.T, env *scenarioEnv, req *http.Request) (int, string) {
	return func(t *testing.T, env *scenarioEnv, req *http.Request) (int, string) {
		body, ctype := multipartBody(t, "shot.png", data)
		up, err := http.NewRequestWithContext(t.Context(), http.MethodPost, req.URL.String(), body)
		if err != nil {
			t.Fatal(err)
		}
		up.Header = req.Header.Clone()
		up.Header.Set("Content-Type", ctype)
		for _, c := range req.Cookies() {
			up.AddCookie(c)
		}
		res, b := env.do(t, up)
		return res.StatusCode, b
	}
}

// bearerUpload uploads as the owner over a bearer token and decodes the
// answer.
func bearerUpload(t *testing.T, env *scenarioEnv, name string, data []byte) (int, map[string]any) {
	t.Helper()
	body, ctype := multipartBody(t, name, data)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, env.URL+"/api/sessions/"+env.SessionID+"/attachments", body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("Authorization", "Bearer "+env.tokens[actorOwner])
	res, b := env.do(t, req)
	var out map[string]any
	if err := json.Unmarshal([]byte(b), &out); err != nil {
		t.Fatalf("upload %s: %d %q", name, res.StatusCode, b)
	}
	return res.StatusCode, out
}

// Uploading is a write (owner, collaborator, admin; a viewer 403, others
// 404, share links and anonymous 401; a cookie without the CSRF token 403);
// reading is for readers, and through a live share link on its route.
func TestAttachmentScenarios(t *testing.T) {
	t.Parallel()
	env := newScenarioEnv(t, withSessionAPI(t))
	img := testkit.PNG(t, 6, 4)
	status, info := bearerUpload(t, env, "seed.png", img)
	if status != http.StatusCreated {
		t.Fatalf("seed upload: %d %v", status, info)
	}
	aid := info["id"].(string)
	csrfRefused := expect(401, only(403, actorOwner, actorCollaborator, actorViewer, actorOther, actorAdmin))
	rows := []scenarioRow{
		{Name: "POST attachments", Method: http.MethodPost, Path: "/api/sessions/{session}/attachments", Send: uploadRow(img), Want: wantWrite(201), Mutates: true},
		{Name: "POST attachments (token)", Method: http.MethodPost, Path: "/api/sessions/{session}/attachments", Auth: viaBearer, Send: uploadRow(img), Want: wantWrite(201), Mutates: true},
		{Name: "POST attachments without CSRF", Method: http.MethodPost, Path: "/api/sessions/{session}/attachments", NoCSRF: true, Send: uploadRow(img), Want: csrfRefused},
		{Name: "GET attachment (API)", Method: http.MethodGet, Path: "/api/sessions/{session}/attachments/" + aid, Want: wantRead},
		{Name: "GET attachment (token)", Method: http.MethodGet, Path: "/api/sessions/{session}/attachments/" + aid, Auth: viaBearer, Want: wantRead},
		// The page route sends people without an account to the login.
		{Name: "GET attachment (page)", Method: http.MethodGet, Path: "/sessions/{session}/attachments/" + aid, Want: expect(303, only(200, actorOwner, actorCollaborator, actorViewer, actorAdmin), only(404, actorOther))},
		{Name: "GET attachment (share link)", Method: http.MethodGet, Path: "/s/{share}/attachments/" + aid, Want: expect(404, only(200, actorShare))},
		{Name: "GET unknown attachment", Method: http.MethodGet, Path: "/sessions/{session}/attachments/nope", Want: expect(303, only(404, userActors...))},
	}
	runScenarios(t, env, rows)
}

func TestAttachmentUploadErrorsAndServing(t *testing.T) {
	t.Parallel()
	env := newScenarioEnv(t, withSessionAPI(t))
	pngB := testkit.PNG(t, 32, 16)
	cases := []struct {
		name   string
		file   string
		data   []byte
		status int
		code   string
		mt     string
		stored string // the name kept, or the error's message
	}{
		{"png", "a.png", pngB, 201, "", "image/png", "a.png"},
		{"a PNG named .jpg is a PNG", "photo.jpg", pngB, 201, "", "image/png", "photo.png"},
		{"a path is cut to its name", "../../evil.html", pngB, 201, "", "image/png", "evil.png"},
		{"a dot file", ".htaccess", pngB, 201, "", "image/png", "htaccess.png"},
		{"webp", "g.webp", testkit.WebP(), 201, "", "image/webp", "g.webp"},
		{"not an image", "notes.png", []byte("just some text\n"), 415, "unsupported_media_type", "", "not an image"},
		{"an image of another type", "x.bmp", append([]byte("BM"), make([]byte, 100)...), 415, "unsupported_media_type", "", "image/bmp"},
		{"a huge canvas in a small file", "bomb.png", testkit.PNGHeader(16384, 16384), 415, "unsupported_media_type", "", "the image is 16384 × 16384 (268 megapixels); at most 40 megapixels"},
		{"damaged", "cut.png", pngB[:30], 400, "bad_request", "", "cannot be read"},
		{"over the cap", "huge.png", append(bytes.Clone(pngB), make([]byte, 10<<20)...), 413, "too_large", "", "the image is larger than"},
	}
	for _, tc := range cases {
		status, out := bearerUpload(t, env, tc.file, tc.data)
		if status != tc.status {
			t.Errorf("%s: status %d, want %d (%v)", tc.name, status, tc.status, out)
			continue
		}
		if tc.code != "" {
			e, _ := out["error"].(map[string]any)
			if msg, _ := e["message"].(string); e["code"] != tc.code || !strings.Contains(msg, tc.stored) {
				t.Errorf("%s: error %v, want code %s saying %q", tc.name, out, tc.code, tc.stored)
			}
			continue
		}
		if out["mediaType"] != tc.mt || out["name"] != tc.stored {
			t.Errorf("%s: %v", tc.name, out)
		}
	}

	// A raw body (scripts) and a missing file field.
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, env.URL+"/api/sessions/"+env.SessionID+"/attachments?name=raw.gif", bytes.NewReader(testkit.GIF(t, 3, 3)))
	req.Header.Set("Authorization", "Bearer "+env.tokens[actorOwner])
	req.Header.Set("Content-Type", "application/octet-stream")
	res, body := env.do(t, req)
	if res.StatusCode != 201 || !strings.Contains(body, `"mediaType":"image/gif"`) || !strings.Contains(body, `"name":"raw.gif"`) {
		t.Errorf("raw upload: %d %s", res.StatusCode, body)
	}
	empty, ctype := multipartBody(t, "x", nil)
	req, _ = http.NewRequestWithContext(t.Context(), http.MethodPost, env.URL+"/api/sessions/"+env.SessionID+"/attachments", strings.NewReader(strings.Replace(readAll(t, empty), `name="file"`, `name="other"`, 1)))
	req.Header.Set("Authorization", "Bearer "+env.tokens[actorOwner])
	req.Header.Set("Content-Type", ctype)
	if res, body := env.do(t, req); res.StatusCode != 400 || !strings.Contains(body, "multipart field") {
		t.Errorf("no file field: %d %s", res.StatusCode, body)
	}

	// Served with the sniffed type, never sniffed again, inline under its
	// safe name, confined.
	_, out := bearerUpload(t, env, "../served.html", pngB)
	req, _ = http.NewRequestWithContext(t.Context(), http.MethodGet, env.URL+"/api/sessions/"+env.SessionID+"/attachments/"+out["id"].(string), nil)
	req.Header.Set("Authorization", "Bearer "+env.tokens[actorOwner])
	res, body = env.do(t, req)
	h := res.Header
	if res.StatusCode != 200 || body != string(pngB) || h.Get("Content-Type") != "image/png" || h.Get("X-Content-Type-Options") != "nosniff" ||
		h.Get("Content-Disposition") != "inline; filename=served.png" ||
		!strings.Contains(h.Get("Content-Security-Policy"), "sandbox") || h.Get("ETag") == "" {
		t.Errorf("served: %d %v", res.StatusCode, h)
	}
	// Revalidation answers 304.
	req.Header.Set("If-None-Match", h.Get("ETag"))
	if res, _ := env.do(t, req); res.StatusCode != http.StatusNotModified {
		t.Errorf("revalidation: %d", res.StatusCode)
	}
}

func readAll(t *testing.T, r io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDisposition: a stored file is inline only when it is an image type
// the page shows, and always under a safe name.
func TestDisposition(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, mediaType, want string }{
		{"shot.png", "image/png", "inline; filename=shot.png"},
		{"", "image/gif", "inline; filename=image.gif"},
		{"../../evil.html", "image/png", "inline; filename=evil.png"},
		{"café.webp", "image/webp", "inline; filename*=utf-8''caf%C3%A9.webp"},
		{"page.html", "text/html", "attachment; filename=page.bin"},
		{"drawing.svg", "image/svg+xml", "attachment; filename=drawing.bin"},
		{"notes", "text/plain", "attachment; filename=notes.txt"},
		{"x.bmp", "image/bmp", "attachment; filename=x.bin"},
	}
	for _, tt := range tests {
		if got := disposition(tt.name, tt.mediaType); got != tt.want {
			t.Errorf("disposition(%q, %s) = %q, want %q", tt.name, tt.mediaType, got, tt.want)
		}
	}
}
