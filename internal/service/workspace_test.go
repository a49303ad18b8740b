package service_test

import (
	"context"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"harness/internal/auth"
	"harness/internal/service"
	"harness/internal/session"
	"harness/internal/testkit"
	"harness/internal/testkit/poll"
	"harness/internal/workspace"
)

// wsEnv is newEnv with workspace roots: /projects (everyone), /team (alice
// only, shared) under a temporary directory, and a fork cap.
type wsEnv struct {
	*env
	projects, team string
}

func newWorkspaceEnv(t *testing.T, forkCap int64) *wsEnv {
	t.Helper()
	base := t.TempDir()
	projects, team := filepath.Join(base, "projects"), filepath.Join(base, "team")
	for _, d := range []string{projects, team} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e := newEnvOn(t, testkit.StackOptions{
		WorkspaceRoots: []workspace.Root{{Path: projects}, {Path: team, Users: []string{"alice"}, Shared: true}},
		ForkCopyMax:    forkCap,
	})
	return &wsEnv{env: e, projects: projects, team: team}
}

// mkdir makes a directory with a file in it.
func mkdir(t *testing.T, dir, file, content string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// lastToolText is the text of the session's last tool result.
func lastToolText(t *testing.T, e *env, id string) string {
	t.Helper()
	ag, ok := e.app.Manager.Lookup(id)
	if !ok {
		t.Fatal("session not loaded")
	}
	text := ""
	for _, ev := range ag.Log().Events(0, ag.Log().Len()) {
		if ev.Type == session.TypeToolResult {
			r, _ := session.Decode[session.ToolResult](ev)
			text = r.Message.Content[0].Text
			if len(r.Message.Content[0].Content) > 0 {
				text = r.Message.Content[0].Content[0].Text
			}
		}
	}
	return text
}

func TestFreshWorkspaceBelongsToToolsAndGoesWithTheSession(t *testing.T) {
	t.Parallel()
	e := newWorkspaceEnv(t, 1<<20)
	s, err := e.svc.CreateSession(t.Context(), e.alice, service.NewSession{Mode: session.ModeAuto})
	if err != nil {
		t.Fatal(err)
	}
	if s.Workspace.Kind != workspace.KindFresh || s.Workspace.Path != filepath.Join(e.app.WorkspaceRoot(), s.ID) {
		t.Fatalf("workspace %+v", s.Workspace)
	}
	fi, err := os.Stat(s.Workspace.Path)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := e.app.Sandbox.Identity()
	if os.Geteuid() == 0 && int(fi.Sys().(*syscall.Stat_t).Uid) != uid {
		t.Errorf("fresh workspace owned by %d, want the tools' user %d", fi.Sys().(*syscall.Stat_t).Uid, uid)
	}
	e.run(e.alice, s.ID, "run: echo made > made.txt && echo $HOME && touch $TMPDIR/scratch-file && ls")
	if out := lastToolText(t, e.env, s.ID); !strings.Contains(out, "made.txt") {
		t.Fatalf("the shell could not write its fresh workspace: %q", out)
	}
	scratch := filepath.Join(filepath.Dir(e.app.WorkspaceRoot()), "scratch", s.ID)
	if _, err := os.Stat(filepath.Join(scratch, "scratch-file")); err != nil {
		t.Errorf("the private temporary directory is not the session's scratch dir: %v", err)
	}
	if err := e.svc.DeleteSession(t.Context(), e.alice, s.ID); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{s.Workspace.Path, scratch} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s survives the session: %v", d, err)
		}
	}
}

func TestOpenExistingDirectory(t *testing.T) {
	t.Parallel()
	e := newWorkspaceEnv(t, 1<<20)
	ctx := t.Context()
	proj := filepath.Join(e.projects, "demo")
	mkdir(t, proj, "README.md", "# demo project\n")
	teamDir := filepath.Join(e.team, "shared")
	mkdir(t, teamDir, "NOTES", "team notes\n")
	outside := t.TempDir()

	dirReq := func(p string) service.NewSession {
		return service.NewSession{Mode: session.ModeAuto, Workspace: service.WorkspaceRequest{Kind: workspace.KindDir, Path: p}}
	}
	s, err := e.svc.CreateSession(ctx, e.alice, dirReq(proj))
	if err != nil {
		t.Fatal(err)
	}
	if s.Workspace.Kind != workspace.KindDir || s.Workspace.Path != proj {
		t.Fatalf("workspace %+v", s.Workspace)
	}
	e.run(e.alice, s.ID, "run: cat README.md")
	if out := lastToolText(t, e.env, s.ID); !strings.Contains(out, "# demo project") {
		t.Fatalf("the shell does not see the project: %q", out)
	}

	cases := []struct {
		name string
		req  service.NewSession
		who  string
		want service.Code
	}{
		{"a second session on an unshared directory", dirReq(proj), "bob", service.CodeConflict},
		{"a directory outside every root", dirReq(outside), "alice", service.CodeForbidden},
		{"a root the user may not use", dirReq(teamDir), "bob", service.CodeForbidden},
		{"a relative path", dirReq("projects/demo"), "alice", service.CodeBadRequest},
		{"a missing directory", dirReq(filepath.Join(e.projects, "nope")), "alice", service.CodeBadRequest},
		{"an escape through ..", dirReq(e.projects + "/../team/shared"), "bob", service.CodeForbidden},
		{"the data directory", dirReq(filepath.Dir(e.app.WorkspaceRoot())), "root", service.CodeForbidden},
		{"an unknown kind", service.NewSession{Workspace: service.WorkspaceRequest{Kind: "elsewhere"}}, "alice", service.CodeBadRequest},
	}
	actors := map[string]*auth.Actor{"alice": e.alice, "bob": e.bob, "root": e.root}
	for _, c := range cases {
		_, err := e.svc.CreateSession(ctx, actors[c.who], c.req)
		wantCode(t, c.name, err, c.want)
	}

	// A shared root lets two sessions use one directory.
	for range 2 {
		if _, err := e.svc.CreateSession(ctx, e.alice, dirReq(teamDir)); err != nil {
			t.Fatalf("shared root: %v", err)
		}
	}
	// Deleting a session never deletes the directory it opened.
	if err := e.svc.DeleteSession(ctx, e.alice, s.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(proj, "README.md")); err != nil {
		t.Fatalf("deleting the session removed the opened directory: %v", err)
	}
	roots, err := e.svc.WorkspaceRoots(ctx, e.bob)
	if err != nil || len(roots) != 1 || roots[0].Path != e.projects {
		t.Fatalf("bob's roots %+v, %v", roots, err)
	}
	entries, err := e.svc.BrowseWorkspace(ctx, e.bob, e.projects)
	if err != nil || len(entries) != 1 || entries[0].Name != "demo" {
		t.Fatalf("browse %+v, %v", entries, err)
	}
	_, err = e.svc.BrowseWorkspace(ctx, e.bob, e.team)
	wantCode(t, "bob browses alice's root", err, service.CodeForbidden)
}

// gitRepo makes a git repository with one commit.
func gitRepo(t *testing.T, dir string) {
	t.Helper()
	mkdir(t, dir, "main.go", "package main\n\nfunc main() { println(\"cloned\") }\n")
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "add", "."},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "first"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

func waitWorkspace(t *testing.T, e *env, id string) service.Session {
	t.Helper()
	var s service.Session
	poll.Eventually(t, "the workspace to be prepared", func() bool {
		var err error
		if s, err = e.svc.GetSession(t.Context(), e.alice, id); err != nil {
			t.Fatal(err)
		}
		return s.Workspace.State != service.WorkspacePreparing
	}, poll.Within(30*time.Second), poll.Every(20*time.Millisecond))
	return s
}

func TestCloneLocalRepository(t *testing.T) {
	t.Parallel()
	e := newWorkspaceEnv(t, 1<<20)
	ctx := t.Context()
	repo := filepath.Join(e.projects, "repo")
	gitRepo(t, repo)

	s, err := e.svc.CreateSession(ctx, e.alice, service.NewSession{
		Mode:      session.ModeAuto,
		Workspace: service.WorkspaceRequest{Kind: workspace.KindClone, Source: repo},
		Prompt:    "run: cat main.go && git log --oneline | wc -l",
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.Workspace.Kind != workspace.KindClone || s.Workspace.Source != repo {
		t.Fatalf("workspace %+v", s.Workspace)
	}
	s = waitWorkspace(t, e.env, s.ID)
	if s.Workspace.State != service.WorkspaceReady {
		t.Fatalf("clone state %q", s.Workspace.State)
	}
	// The held prompt ran once the clone was ready.
	waitTurnEnd(t, e.env, s.ID)
	out := lastToolText(t, e.env, s.ID)
	if !strings.Contains(out, `println("cloned")`) {
		t.Fatalf("the held prompt did not run on the clone: %q", out)
	}
	ag, _ := e.app.Manager.Lookup(s.ID)
	var ready *session.WorkspaceReady
	for _, ev := range ag.Log().Events(0, ag.Log().Len()) {
		if ev.Type == session.TypeWorkspaceReady {
			r, _ := session.Decode[session.WorkspaceReady](ev)
			ready = &r
		}
	}
	if ready == nil || ready.Kind != "clone" || len(ready.Commit) != 40 || ready.Branch != "main" || ready.Files != 1 {
		t.Fatalf("workspace/ready %+v", ready)
	}
	// The clone belongs to the session: the source is untouched and
	// deleting the session removes the clone only.
	if err := e.svc.DeleteSession(ctx, e.alice, s.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(repo, ".git")); err != nil {
		t.Fatal("the clone source was harmed")
	}
}

func TestCloneRefusals(t *testing.T) {
	t.Parallel()
	e := newWorkspaceEnv(t, 1<<20)
	ctx := t.Context()
	for _, c := range []struct{ name, src string }{
		{"a host nobody allowed", "https://github.com/example/repo.git"},
		{"credentials in the URL", "https://user:pw@github.com/x.git"},
		{"an ext:: transport", "ext::sh -c touch% /tmp/pwned"},
		{"a path outside every root", "/etc"},
		{"nothing", " "},
	} {
		_, err := e.svc.CreateSession(ctx, e.alice, service.NewSession{Workspace: service.WorkspaceRequest{Kind: workspace.KindClone, Source: c.src}})
		if code(err) != service.CodeBadRequest && code(err) != service.CodeForbidden {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if _, err := os.Stat("/tmp/pwned"); err == nil {
		t.Fatal("the ext:: transport ran")
	}
}

func TestCloneFailureKeepsTheSessionUsable(t *testing.T) {
	t.Parallel()
	e := newWorkspaceEnv(t, 1<<20)
	notRepo := filepath.Join(e.projects, "plain")
	mkdir(t, notRepo, "x", "not a repository\n")
	s, err := e.svc.CreateSession(t.Context(), e.alice, service.NewSession{
		Workspace: service.WorkspaceRequest{Kind: workspace.KindClone, Source: notRepo},
	})
	if err != nil {
		t.Fatal(err)
	}
	s = waitWorkspace(t, e.env, s.ID)
	if s.Workspace.State != service.WorkspaceFailed {
		t.Fatalf("state %q", s.Workspace.State)
	}
	ag, _ := e.app.Manager.Lookup(s.ID)
	evs := ag.Log().Events(0, ag.Log().Len())
	last := evs[len(evs)-1]
	f, _ := session.Decode[session.WorkspaceFailed](last)
	if last.Type != session.TypeWorkspaceFailed || !strings.Contains(f.Error, "clone") {
		t.Fatalf("last event %s %+v", last.Type, f)
	}
	e.run(e.alice, s.ID, "hello")
}

func TestSendWhilePreparingIsRefused(t *testing.T) {
	t.Parallel()
	e := newWorkspaceEnv(t, 1<<20)
	repo := filepath.Join(e.projects, "repo")
	gitRepo(t, repo)
	s, err := e.svc.CreateSession(t.Context(), e.alice, service.NewSession{Workspace: service.WorkspaceRequest{Kind: workspace.KindClone, Source: repo}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Workspace.State == service.WorkspacePreparing {
		_, err = e.svc.SendMessage(t.Context(), e.alice, s.ID, service.Message{Content: "too early"})
		if got := code(err); got != service.CodeWorkspaceNotReady && got != "" {
			t.Fatalf("send while preparing: %v", err)
		}
	}
	waitWorkspace(t, e.env, s.ID)
}

func TestForkCopiesTheWorkspace(t *testing.T) {
	t.Parallel()
	e := newWorkspaceEnv(t, 64<<10)
	ctx := t.Context()
	src, err := e.svc.CreateSession(ctx, e.alice, service.NewSession{Mode: session.ModeAuto})
	if err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(t.TempDir(), "outside-secret")
	if err := os.WriteFile(secret, []byte("outside-secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mkdir(t, filepath.Join(src.Workspace.Path, "src"), "app.txt", "hello fork\n")
	if err := os.Symlink(secret, filepath.Join(src.Workspace.Path, "link-out")); err != nil {
		t.Fatal(err)
	}
	e.run(e.alice, src.ID, "hello")

	child, err := e.svc.Fork(ctx, e.alice, src.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(child.Workspace.Path, "src", "app.txt"))
	if err != nil || string(b) != "hello fork\n" {
		t.Fatalf("fork copy: %q, %v", b, err)
	}
	// A link is copied as a link, never followed into a copy of its target.
	if fi, err := os.Lstat(filepath.Join(child.Workspace.Path, "link-out")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("link-out: %v %v", fi, err)
	}
	ready := lastEvent[session.WorkspaceReady](t, e.env, child.ID, session.TypeWorkspaceReady)
	if ready.Copied == nil || !*ready.Copied || ready.Files != 1 || ready.Source != src.ID {
		t.Fatalf("workspace/ready %+v", ready)
	}

	// Over the cap nothing is copied, and the log says why.
	big := make([]byte, 100<<10)
	if err := os.WriteFile(filepath.Join(src.Workspace.Path, "big.bin"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	child2, err := e.svc.Fork(ctx, e.alice, src.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(child2.Workspace.Path)
	if len(ents) != 0 {
		t.Fatalf("an over-cap fork copied %d entries", len(ents))
	}
	ready = lastEvent[session.WorkspaceReady](t, e.env, child2.ID, session.TypeWorkspaceReady)
	if ready.Copied == nil || *ready.Copied || !strings.Contains(ready.Note, "fork cap") {
		t.Fatalf("over cap: %+v", ready)
	}
}

func lastEvent[T any](t *testing.T, e *env, id string, typ session.Type) T {
	t.Helper()
	ag, ok := e.app.Manager.Lookup(id)
	if !ok {
		t.Fatal("not loaded")
	}
	var v T
	found := false
	for _, ev := range ag.Log().Events(0, ag.Log().Len()) {
		if ev.Type == typ {
			v, _ = session.Decode[T](ev)
			found = true
		}
	}
	if !found {
		t.Fatalf("no %s event", typ)
	}
	return v
}

func TestNetworkIsAnAdminSwitch(t *testing.T) {
	t.Parallel()
	e := newWorkspaceEnv(t, 1<<20)
	ctx := t.Context()
	s := e.shared(service.NewSession{Mode: session.ModeAuto})
	on := true
	_, err := e.svc.UpdateSession(ctx, e.alice, s.ID, service.Patch{Network: &on})
	wantCode(t, "the owner turns the network on", err, service.CodeForbidden)
	got, err := e.svc.UpdateSession(ctx, e.root, s.ID, service.Patch{Network: &on})
	if err != nil || !got.Workspace.Network {
		t.Fatalf("admin: %+v, %v", got.Workspace, err)
	}
	_, err = e.svc.UpdateSession(ctx, e.bob, s.ID, service.Patch{Network: &on})
	wantCode(t, "a stranger", err, service.CodeNotFound)
}

func TestRelativeWorkspaceIsFoundAgain(t *testing.T) {
	t.Parallel()
	e := newWorkspaceEnv(t, 1<<20)
	ctx := t.Context()
	s, err := e.svc.CreateSession(ctx, e.alice, service.NewSession{})
	if err != nil {
		t.Fatal(err)
	}
	// As a server started with `-data data` stored it before paths were
	// made absolute.
	if err := e.app.Store.SetWorkspace(ctx, s.ID, filepath.Join("data", "workspaces", s.ID)); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.ResumeWorkspaces(context.Background()); err != nil {
		t.Fatal(err)
	}
	row, err := e.app.Store.GetSession(ctx, s.ID)
	if err != nil || row.Workspace != s.Workspace.Path {
		t.Fatalf("workspace %q, want %q (%v)", row.Workspace, s.Workspace.Path, err)
	}
}

// TestCloneOverHTTPFromAnAllowedHost clones from a git HTTP server on
// loopback: the host must be allowed, and the clone (and only the clone)
// gets the network.
func TestCloneOverHTTPFromAnAllowedHost(t *testing.T) {
	t.Parallel()
	backend := "/usr/lib/git-core/git-http-backend"
	if _, err := os.Stat(backend); err != nil {
		t.Skipf("!!! SKIPPING: %s is missing (apt-get install git) !!!", backend)
	}
	served := t.TempDir()
	repo := filepath.Join(served, "hello.git")
	work := filepath.Join(t.TempDir(), "work")
	gitRepo(t, work)
	if out, err := exec.Command("git", "clone", "-q", "--bare", work, repo).CombinedOutput(); err != nil {
		t.Fatalf("bare clone: %v\n%s", err, out)
	}
	srv := httptest.NewServer(&cgi.Handler{
		Path: backend,
		Env:  []string{"GIT_PROJECT_ROOT=" + served, "GIT_HTTP_EXPORT_ALL=1"},
	})
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	e := newWorkspaceEnv(t, 1<<20)
	ctx := t.Context()
	src := service.WorkspaceRequest{Kind: workspace.KindClone, Source: srv.URL + "/hello.git"}

	_, err := e.svc.CreateSession(ctx, e.alice, service.NewSession{Workspace: src})
	wantCode(t, "a host nobody allowed", err, service.CodeForbidden)

	if err := e.svc.SetGitHosts(ctx, e.alice, []string{"http://" + host}); code(err) != service.CodeForbidden {
		t.Fatalf("a user set the git hosts: %v", err)
	}
	if err := e.svc.SetGitHosts(ctx, e.root, []string{"http://" + host}); err != nil {
		t.Fatal(err)
	}
	s, err := e.svc.CreateSession(ctx, e.alice, service.NewSession{Workspace: src, Mode: session.ModeAuto, Prompt: "run: cat main.go"})
	if err != nil {
		t.Fatal(err)
	}
	if s = waitWorkspace(t, e.env, s.ID); s.Workspace.State != service.WorkspaceReady {
		t.Fatalf("clone state %q: %+v", s.Workspace.State, lastEvent[session.WorkspaceFailed](t, e.env, s.ID, session.TypeWorkspaceFailed))
	}
	waitTurnEnd(t, e.env, s.ID)
	if out := lastToolText(t, e.env, s.ID); !strings.Contains(out, `println("cloned")`) {
		t.Fatalf("the clone is not in the workspace: %q", out)
	}
	// The session's own tools still have no network.
	e.run(e.alice, s.ID, "run: git ls-remote "+srv.URL+"/hello.git; echo status=$?")
	if out := lastToolText(t, e.env, s.ID); strings.Contains(out, "status=0") {
		t.Fatalf("a tool reached the network: %q", out)
	}
}

// waitTurnEnd waits for the session's first turn to end (the held prompt is
// sent a moment after the workspace is marked ready).
func waitTurnEnd(t *testing.T, e *env, id string) {
	t.Helper()
	poll.Eventually(t, "a turn to end", func() bool {
		if ag, ok := e.app.Manager.Lookup(id); ok {
			for _, ev := range ag.Log().Events(0, ag.Log().Len()) {
				if ev.Type == session.TypeTurnEnd {
					return true
				}
			}
		}
		return false
	}, poll.Within(30*time.Second), poll.Every(10*time.Millisecond))
}
