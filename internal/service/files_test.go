package service_test

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"harness/internal/auth"
	"harness/internal/files"
	"harness/internal/service"
)

// filesEnv is a shared session of alice's with files in its workspace.
func filesEnv(t *testing.T) (*env, service.Session, string) {
	t.Helper()
	e := newEnv(t)
	s := e.shared(service.NewSession{})
	row, err := e.app.Store.GetSession(t.Context(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	ws := row.Workspace
	for rel, content := range map[string]string{"src/hello.go": "package main\n", "README.md": "# hi\n", "blob.bin": "\x00\x01\x02"} {
		p := filepath.Join(ws, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return e, s, ws
}

func TestFilesAuthorization(t *testing.T) {
	t.Parallel()
	e, s, _ := filesEnv(t)
	ctx := t.Context()
	for _, a := range []*auth.Actor{e.alice, e.carol, e.dave, e.root} {
		l, err := e.svc.ListFiles(ctx, a, s.ID, "")
		if err != nil {
			t.Fatalf("%s lists: %v", a.Name, err)
		}
		if len(l.Entries) != 3 || l.Entries[0].Name != "src" || l.Entries[0].Kind != files.KindDir {
			t.Fatalf("%s listing %+v", a.Name, l)
		}
		c, err := e.svc.ReadFile(ctx, a, s.ID, "src/hello.go")
		if err != nil || c.Content != "package main\n" || c.Path != "src/hello.go" || c.Size != 13 || c.Truncated || c.Binary {
			t.Fatalf("%s reads: %+v %v", a.Name, c, err)
		}
		f, info, err := e.svc.OpenFile(ctx, a, s.ID, "src/hello.go")
		if err != nil {
			t.Fatalf("%s opens: %v", a.Name, err)
		}
		b, _ := io.ReadAll(f)
		f.Close()
		if string(b) != "package main\n" || info.Size() != 13 {
			t.Fatalf("%s downloads %q", a.Name, b)
		}
	}
	// A stranger does not learn the session exists; anonymous is asked to
	// sign in.
	_, err := e.svc.ListFiles(ctx, e.bob, s.ID, "")
	wantCode(t, "stranger lists", err, service.CodeNotFound)
	_, err = e.svc.ReadFile(ctx, e.bob, s.ID, "src/hello.go")
	wantCode(t, "stranger reads", err, service.CodeNotFound)
	_, _, err = e.svc.OpenFile(ctx, e.bob, s.ID, "src/hello.go")
	wantCode(t, "stranger opens", err, service.CodeNotFound)
	_, err = e.svc.ListFiles(ctx, nil, s.ID, "")
	wantCode(t, "anonymous lists", err, service.CodeUnauthorized)
	_, err = e.svc.ListFiles(ctx, e.alice, "no-such-session", "")
	wantCode(t, "unknown session", err, service.CodeNotFound)

	// A share link reads the transcript, never the workspace.
	l, err := e.svc.CreateShareLink(ctx, e.alice, s.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	guest, err := e.app.Auth.ShareActor(ctx, l.Token)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.GetSession(ctx, guest, s.ID); err != nil {
		t.Fatalf("the share link reads the session: %v", err)
	}
	_, err = e.svc.ListFiles(ctx, guest, s.ID, "")
	wantCode(t, "share link lists", err, service.CodeForbidden)
	_, err = e.svc.ReadFile(ctx, guest, s.ID, "src/hello.go")
	wantCode(t, "share link reads", err, service.CodeForbidden)
	_, _, err = e.svc.OpenFile(ctx, guest, s.ID, "src/hello.go")
	wantCode(t, "share link opens", err, service.CodeForbidden)
}

func TestFilesPathErrors(t *testing.T) {
	t.Parallel()
	e, s, ws := filesEnv(t)
	ctx := t.Context()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("TOP SECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(ws, "leak")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"../x", "/etc/passwd", "src/../../x", "leak", "a\x00b"} {
		_, err := e.svc.ReadFile(ctx, e.alice, s.ID, p)
		wantCode(t, "read "+p, err, service.CodeBadRequest)
		_, err = e.svc.ListFiles(ctx, e.alice, s.ID, p)
		wantCode(t, "list "+p, err, service.CodeBadRequest)
		_, _, err = e.svc.OpenFile(ctx, e.alice, s.ID, p)
		wantCode(t, "open "+p, err, service.CodeBadRequest)
	}
	_, err := e.svc.ReadFile(ctx, e.alice, s.ID, "nope.txt")
	wantCode(t, "read missing", err, service.CodeNotFound)
	_, err = e.svc.ListFiles(ctx, e.alice, s.ID, "nope")
	wantCode(t, "list missing", err, service.CodeNotFound)
	_, err = e.svc.ReadFile(ctx, e.alice, s.ID, "src")
	wantCode(t, "read a directory", err, service.CodeBadRequest)
	_, err = e.svc.ListFiles(ctx, e.alice, s.ID, "README.md")
	wantCode(t, "list a file", err, service.CodeBadRequest)

	// The symlink is listed, not followed.
	l, err := e.svc.ListFiles(ctx, e.alice, s.ID, ".")
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, en := range l.Entries {
		kinds = append(kinds, en.Name+":"+string(en.Kind))
	}
	if got := strings.Join(kinds, " "); got != "src:dir blob.bin:file leak:symlink README.md:file" {
		t.Fatalf("listing %s", got)
	}
	// Binary files come without content; big ones are capped.
	c, err := e.svc.ReadFile(ctx, e.alice, s.ID, "blob.bin")
	if err != nil || !c.Binary || c.Content != "" || c.Size != 3 {
		t.Fatalf("binary %+v %v", c, err)
	}
	if err := os.WriteFile(filepath.Join(ws, "big.txt"), []byte(strings.Repeat("a", service.MaxFileView+10)), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err = e.svc.ReadFile(ctx, e.alice, s.ID, "big.txt")
	if err != nil || !c.Truncated || len(c.Content) != service.MaxFileView || c.Size != service.MaxFileView+10 {
		t.Fatalf("big: truncated %v, %d bytes, size %d, %v", c.Truncated, len(c.Content), c.Size, err)
	}
}
