package web

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"harness/internal/models"
	"harness/internal/render"
	"harness/internal/service"
)

// withWorkspace gives the scenario session a workspace holding files.
func withWorkspace(t *testing.T, env *scenarioEnv, files map[string]string) string {
	t.Helper()
	ws := t.TempDir()
	for rel, content := range files {
		p := filepath.Join(ws, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := env.DB.W.Model(&models.Session{}).Where("id = ?", env.SessionID).Update("workspace", ws).Error; err != nil {
		t.Fatal(err)
	}
	return ws
}

// The files routes answer readers (owner, members, admins); other users
// do not learn the session exists; share links and everyone without an
// account get 401 (the REST API needs a user).
func TestFilesAPIScenarios(t *testing.T) {
	t.Parallel()
	env := newScenarioEnv(t, withSessionAPI(t))
	withWorkspace(t, env, map[string]string{"src/hello.go": "package main\n"})
	rows := []scenarioRow{
		{Name: "GET files", Method: http.MethodGet, Path: "/api/sessions/{session}/files", Want: wantRead},
		{Name: "GET files (token)", Method: http.MethodGet, Path: "/api/sessions/{session}/files?path=src", Auth: viaBearer, Want: wantRead},
		{Name: "GET file content", Method: http.MethodGet, Path: "/api/sessions/{session}/files/content?path=src/hello.go", Want: wantRead},
		{Name: "GET file download", Method: http.MethodGet, Path: "/api/sessions/{session}/files/download?path=src%2Fhello.go", Want: wantRead},
		{Name: "GET file download (token)", Method: http.MethodGet, Path: "/api/sessions/{session}/files/download?path=src%2Fhello.go", Auth: viaBearer, Want: wantRead},
		// Not found for everyone who may read; the same 404 as no access
		// for the others.
		{Name: "GET missing file", Method: http.MethodGet, Path: "/api/sessions/{session}/files/content?path=nope", Want: expect(401, only(404, userActors...))},
	}
	runScenarios(t, env, rows)
}

// getJSON sends an owner's bearer request and decodes the JSON answer.
func getJSON(t *testing.T, env *scenarioEnv, path string, out any) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, env.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+env.tokens[actorOwner])
	res, body := env.do(t, req)
	if out != nil {
		if err := json.Unmarshal([]byte(body), out); err != nil {
			t.Fatalf("GET %s: %d %q: %v", path, res.StatusCode, body, err)
		}
	}
	return res
}

func TestFilesAPIResponses(t *testing.T) {
	t.Parallel()
	env := newScenarioEnv(t, withSessionAPI(t))
	ws := withWorkspace(t, env, map[string]string{
		"src/hello.go":            "package main\n",
		"README.md":               "# hi\n",
		"bin.dat":                 "\x00\x01",
		`we"ird ü\name.txt`:       "odd",
		"big.txt":                 strings.Repeat("z", 256<<10+1),
		".hidden/inside/file.txt": "h",
	})
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("TOP SECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(ws, "leak")); err != nil {
		t.Fatal(err)
	}
	base := "/api/sessions/" + env.SessionID + "/files"

	var l struct {
		Path    string `json:"path"`
		Entries []struct {
			Name, Path, Kind string
			Size             int64
		} `json:"entries"`
		Truncated bool `json:"truncated"`
	}
	if res := getJSON(t, env, base, &l); res.StatusCode != 200 {
		t.Fatalf("list %d", res.StatusCode)
	}
	var got []string
	for _, e := range l.Entries {
		got = append(got, e.Name+":"+e.Kind)
	}
	if l.Path != "." || l.Truncated || strings.Join(got, " ") != `.hidden:dir src:dir big.txt:file bin.dat:file leak:symlink README.md:file we"ird ü\name.txt:file` {
		t.Fatalf("listing %+v", l)
	}

	var fc struct {
		Path              string
		Size              int64
		Truncated, Binary bool
		Content           string
	}
	if res := getJSON(t, env, base+"/content?path=./src//hello.go", &fc); res.StatusCode != 200 || fc.Path != "src/hello.go" || fc.Content != "package main\n" || fc.Size != 13 || fc.Truncated || fc.Binary {
		t.Fatalf("content %d %+v", res.StatusCode, fc)
	}
	if getJSON(t, env, base+"/content?path=bin.dat", &fc); !fc.Binary || fc.Content != "" || fc.Size != 2 {
		t.Fatalf("binary %+v", fc)
	}
	if getJSON(t, env, base+"/content?path=big.txt", &fc); !fc.Truncated || len(fc.Content) != 256<<10 {
		t.Fatalf("big: truncated %v, %d bytes", fc.Truncated, len(fc.Content))
	}

	// Path errors, with codes.
	for path, want := range map[string]struct {
		status int
		code   service.Code
	}{
		base + "?path=..":                             {400, service.CodeBadRequest},
		base + "?path=%2Fetc":                         {400, service.CodeBadRequest},
		base + "?path=README.md":                      {400, service.CodeBadRequest},
		base + "?path=nope":                           {404, service.CodeNotFound},
		base + "/content?path=..%2F..%2Fetc%2Fpasswd": {400, service.CodeBadRequest},
		base + "/content?path=leak":                   {400, service.CodeBadRequest},
		base + "/content?path=src":                    {400, service.CodeBadRequest},
		base + "/content?path=nope.go":                {404, service.CodeNotFound},
		base + "/download?path=leak":                  {400, service.CodeBadRequest},
		base + "/download?path=":                      {400, service.CodeBadRequest},
		base + "/download?path=nope":                  {404, service.CodeNotFound},
	} {
		var e struct {
			Error service.Error `json:"error"`
		}
		res := getJSON(t, env, path, &e)
		if res.StatusCode != want.status || e.Error.Code != want.code || strings.Contains(e.Error.Message, outside) {
			t.Errorf("GET %s: %d %+v, want %d %s", path, res.StatusCode, e.Error, want.status, want.code)
		}
	}

	// Downloads: the bytes, as an attachment never sniffed or rendered.
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, env.URL+base+"/download?path=src/hello.go", nil)
	req.Header.Set("Authorization", "Bearer "+env.tokens[actorOwner])
	res, body := env.do(t, req)
	h := res.Header
	if res.StatusCode != 200 || body != "package main\n" || h.Get("Content-Type") != "application/octet-stream" ||
		h.Get("Content-Disposition") != "attachment; filename=hello.go" || h.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("download %d %q %v", res.StatusCode, body, h)
	}
	req, _ = http.NewRequestWithContext(t.Context(), http.MethodGet, env.URL+base+"/download?path="+`we"ird+%C3%BC%5Cname.txt`, nil)
	req.Header.Set("Authorization", "Bearer "+env.tokens[actorOwner])
	res, body = env.do(t, req)
	if cd := res.Header.Get("Content-Disposition"); res.StatusCode != 200 || body != "odd" || cd != `attachment; filename*=utf-8''we%22ird%20%C3%BC_name.txt` {
		t.Errorf("odd name: %d %q %q", res.StatusCode, body, cd)
	}
}

func TestAttachmentNames(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{
		"hello.go":       "attachment; filename=hello.go",
		"a b.txt":        `attachment; filename="a b.txt"`,
		`q"uote.txt`:     `attachment; filename="q\"uote.txt"`,
		"new\nline\r.sh": "attachment; filename=new_line_.sh",
		"ü.txt":          "attachment; filename*=utf-8''%C3%BC.txt",
		"":               "attachment; filename=download",
		"..":             "attachment; filename=download",
	} {
		if got := attachment(name); got != want {
			t.Errorf("attachment(%q) = %s, want %s", name, got, want)
		}
	}
}

// The file view is one highlighted, sanitised code block: the content
// cannot close the fence or become markup.
func TestHighlightFile(t *testing.T) {
	t.Parallel()
	md := render.NewMarkdown()
	html := highlightFile(md, "src/main.go", "package main\n\nfunc main() {}\n")
	if !strings.Contains(html, `<div class="code" data-lang="go">`) || !strings.Contains(html, `<span class="kd">func</span>`) {
		t.Errorf("go: %s", html)
	}
	tricky := "before\n```\n<script>alert(1)</script>\n````\n# not a heading\n"
	html = highlightFile(md, "notes.md", tricky)
	if strings.Count(html, `<div class="code"`) != 1 || strings.Contains(html, "<script") || strings.Contains(html, "<h1") ||
		!strings.Contains(html, "&lt;script&gt;") {
		t.Errorf("fence escape: %s", html)
	}
	if html := highlightFile(md, "Makefile", "all:\n\techo hi\n"); !strings.Contains(html, `data-lang="makefile"`) {
		t.Errorf("makefile: %s", html)
	}
	if html := highlightFile(md, "data.unknownext", "x < y\n"); !strings.Contains(html, "x &lt; y") {
		t.Errorf("unknown: %s", html)
	}
	if got := fileLang(".bashrc"); got != ".bashrc" {
		t.Errorf("fileLang(.bashrc) = %q", got)
	}
}
