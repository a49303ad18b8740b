package workspace

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"harness/internal/sandbox/sandboxtest"
)

func newManager(t *testing.T, roots []Root, forkCap int64) *Manager {
	t.Helper()
	m, err := New(Deps{
		Sandbox: sandboxtest.Shared(t), DataDir: t.TempDir(), ForkCopyMax: forkCap,
		Roots: func(context.Context) ([]Root, error) { return roots, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestHostAllowed(t *testing.T) {
	t.Parallel()
	hosts := []string{"github.com", "git.example.com:8443", "http://127.0.0.1:9000", "https://gitlab.com"}
	for raw, want := range map[string]bool{
		"https://github.com/a/b.git":            true,
		"https://GITHUB.com/a/b.git":            true,
		"http://github.com/a/b.git":             false, // plain http needs http://
		"https://git.example.com:8443/x.git":    true,
		"https://git.example.com/x.git":         false,
		"http://127.0.0.1:9000/r.git":           true,
		"https://127.0.0.1:9000/r.git":          false,
		"https://gitlab.com/g/p.git":            true,
		"https://github.com.evil.example/a.git": false,
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := hostAllowed(hosts, u); got != want {
			t.Errorf("%s: allowed = %v, want %v", raw, got, want)
		}
	}
}

func TestRootsRefuseTheDataDirectory(t *testing.T) {
	t.Parallel()
	m := newManager(t, nil, 0)
	data := m.d.DataDir
	for _, p := range []string{data, filepath.Dir(data), filepath.Join(data, "workspaces"), "relative", filepath.Join(data, "missing")} {
		if _, err := m.CheckRoot(p); err == nil {
			t.Errorf("CheckRoot(%s) accepted", p)
		}
	}
	ok := t.TempDir()
	if got, err := m.CheckRoot(ok + "/"); err != nil || got != ok {
		t.Errorf("CheckRoot(%s) = %q, %v", ok, got, err)
	}
	// A root that contains the data directory offers nothing.
	m2 := newManager(t, []Root{{Path: "/"}}, 0)
	if roots, err := m2.UsableRoots(t.Context(), User{Name: "u"}); err != nil || len(roots) != 0 {
		t.Errorf("a root over the data directory is usable: %+v %v", roots, err)
	}
}

// A SQLite database outside the data directory (HARNESS_DB_DSN) is
// private too: no root or workspace may contain it.
func TestRootsRefuseTheDatabaseFile(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	dbDir := filepath.Join(top, "db")
	for _, d := range []string{dbDir, filepath.Join(dbDir, "sub"), filepath.Join(top, "projects")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	m, err := New(Deps{Sandbox: sandboxtest.Shared(t), DataDir: t.TempDir(), PrivateFiles: []string{filepath.Join(dbDir, "harness.db")}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		root string
		ok   bool
	}{
		{top, false},                           // contains the database
		{dbDir, false},                         // its directory: -wal, -shm too
		{filepath.Join(top, "projects"), true}, // beside it
		{filepath.Join(dbDir, "sub"), true},    // below it, without it
	} {
		if _, err := m.CheckRoot(tc.root); (err == nil) != tc.ok {
			t.Errorf("CheckRoot(%s): err = %v, want ok=%v", tc.root, err, tc.ok)
		}
	}
}

func TestRelocate(t *testing.T) {
	t.Parallel()
	m := newManager(t, nil, 0)
	for stored, want := range map[string]string{
		"data/workspaces/abc":      filepath.Join(m.fresh, "abc"),
		"./data/workspaces/abc":    filepath.Join(m.fresh, "abc"),
		"/srv/projects/abc":        "/srv/projects/abc",
		"elsewhere/abc":            "elsewhere/abc",
		"data/workspaces/other-id": "data/workspaces/other-id",
	} {
		if got := m.Relocate("abc", stored); got != want {
			t.Errorf("Relocate(%q) = %q, want %q", stored, got, want)
		}
	}
}

func TestRemoveKeepsOpenedDirectories(t *testing.T) {
	t.Parallel()
	m := newManager(t, nil, 0)
	dir, err := m.CreateFresh("s1")
	if err != nil {
		t.Fatal(err)
	}
	opened := t.TempDir()
	if err := m.Remove("s1", dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("fresh workspace survives: %v", err)
	}
	if err := m.Remove("s2", opened); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(opened); err != nil {
		t.Errorf("an opened directory was removed: %v", err)
	}
	if _, err := m.FreshDir("../escape"); err == nil {
		t.Error("a session id with a path in it was accepted")
	}
}

func TestCopyTreeSkipsSpecialFilesAndKeepsLinks(t *testing.T) {
	t.Parallel()
	m := newManager(t, nil, 1<<20)
	src, err := m.CreateFresh("parent")
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(src, "a", "b"), 0o755)
	os.WriteFile(filepath.Join(src, "a", "b", "f.txt"), []byte("deep\n"), 0o640)
	os.Symlink("/etc/passwd", filepath.Join(src, "passwd-link"))
	if err := syscall.Mkfifo(filepath.Join(src, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	dst, err := m.CreateFresh("child")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := m.CopyTree(t.Context(), src, dst)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Copied || rep.Files != 1 || rep.Dirs != 2 || rep.Links != 1 || rep.Skipped != 1 || rep.Bytes != 5 {
		t.Fatalf("report %+v", rep)
	}
	if fi, err := os.Stat(filepath.Join(dst, "a", "b", "f.txt")); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("copied file: %v %v", fi, err)
	}
	if target, err := os.Readlink(filepath.Join(dst, "passwd-link")); err != nil || target != "/etc/passwd" {
		t.Errorf("link: %q %v", target, err)
	}
	if _, err := os.Lstat(filepath.Join(dst, "pipe")); err == nil {
		t.Error("a FIFO was copied")
	}
	uid, _ := m.d.Sandbox.Identity()
	if fi, err := os.Stat(filepath.Join(dst, "a")); os.Geteuid() == 0 && (err != nil || int(fi.Sys().(*syscall.Stat_t).Uid) != uid) {
		t.Errorf("copied directory not owned by the tools' user: %v", err)
	}
}
