package e2e_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"harness/internal/config"
)

// projectsRoot makes a workspace root holding a plain project and a git
// repository.
func projectsRoot(t *testing.T) (root, project, repo string) {
	t.Helper()
	root = t.TempDir()
	project, repo = filepath.Join(root, "notes"), filepath.Join(root, "hello-repo")
	for _, d := range []string{project, repo} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(project, "TODO.md"), []byte("- water the plants\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "README.md"), []byte("# hello from the repository\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "add", "."},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "first"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return root, project, repo
}

// TestCloneRepositoryFromTheStartForm: a user clones a repository from the
// new-session form; the chat page says it is cloning, then that it is ready
// with its commit, and the first prompt (held meanwhile) runs in the clone.
func TestCloneRepositoryFromTheStartForm(t *testing.T) {
	t.Parallel()
	root, _, repo := projectsRoot(t)
	s := newServer(t, serverOpts{config: func(c *config.Config) {
		c.WorkspaceRoots = []config.WorkspaceRoot{{Path: root}}
	}})
	b := s.newBrowser()
	b.login(bobName, bobPass)
	b.open("/")
	b.do(
		chromedp.SetValue(chromedp.ID("new-prompt"), "run: cat README.md && git log --oneline | wc -l"),
		chromedp.SetValue(chromedp.ID("new-mode"), "auto"),
		chromedp.SendKeys(chromedp.ID("ws-source"), repo),
	)
	if !eval[bool](b, `document.getElementById("ws-clone").checked`) {
		t.Fatal("typing a source did not choose the clone option")
	}
	b.do(chromedp.Submit(chromedp.ID("new-prompt")), chromedp.WaitVisible(chromedp.ID("composer-input")))
	b.waitSynced()
	b.waitJS("the clone's notice", `[...document.querySelectorAll(".notice-workspace")].some(n => n.innerText.includes("Workspace cloned from"))`)
	notice := b.text(".notice-workspace")
	if !strings.Contains(notice, repo) || !strings.Contains(notice, "(main) at ") {
		t.Errorf("clone notice %q", notice)
	}
	b.waitTurns(1)
	out := lastTerm(b)
	if !strings.Contains(out, "# hello from the repository") {
		t.Errorf("the held prompt did not run in the clone: %q", out)
	}
	if chip := b.text("#workspace-chip"); chip != "cloned: hello-repo" {
		t.Errorf("workspace chip %q", chip)
	}
	if b.count("#workspace-banner") != 0 || eval[bool](b, `document.getElementById("composer-input").disabled`) {
		t.Error("the clone banner stayed or the composer stayed disabled")
	}
	b.shot("workspace-clone")
}

// TestOpenExistingFolder: a folder under a root is offered in the form; the
// session works in it and its header names it.
func TestOpenExistingFolder(t *testing.T) {
	t.Parallel()
	root, project, _ := projectsRoot(t)
	s := newServer(t, serverOpts{config: func(c *config.Config) {
		c.WorkspaceRoots = []config.WorkspaceRoot{{Path: root}}
	}})
	b := s.newBrowser()
	b.login(bobName, bobPass)
	b.open("/")
	b.do(
		chromedp.SetValue(chromedp.ID("new-mode"), "auto"),
		chromedp.SetValue(chromedp.ID("ws-path"), project),
		chromedp.Click(chromedp.ID("ws-dir")),
		chromedp.Submit(chromedp.ID("new-prompt")),
		chromedp.WaitVisible(chromedp.ID("composer-input")),
	)
	b.waitSynced()
	if chip := b.text("#workspace-chip"); chip != "notes" {
		t.Errorf("workspace chip %q", chip)
	}
	b.send("run: cat TODO.md")
	b.waitTurns(1)
	if out := lastTerm(b); !strings.Contains(out, "water the plants") {
		t.Errorf("the shell does not see the project: %q", out)
	}
}

// TestSettingsShowsTheSandbox: everyone sees what confines tools; an admin
// adds a workspace root and allows a route the network.
func TestSettingsShowsTheSandbox(t *testing.T) {
	t.Parallel()
	root, _, _ := projectsRoot(t)
	s := newServer(t, serverOpts{})
	bob := s.newBrowser()
	bob.login(bobName, bobPass)
	bob.open("/settings")
	summary := bob.text("#sandbox-summary")
	if !strings.Contains(summary, "Landlock ABI") {
		t.Errorf("sandbox summary %q", summary)
	}
	if bob.count("#add-root") != 0 {
		t.Error("a user who is not an admin sees the roots form")
	}

	admin := s.newBrowser()
	admin.login(adminName, adminPass)
	admin.open("/settings")
	admin.do(
		chromedp.SetValue(chromedp.CSS(`#add-root input[name=path]`), root),
		chromedp.SetValue(chromedp.CSS(`#add-root input[name=users]`), "bob"),
	)
	admin.clickNav(`#add-root button[type=submit]`)
	admin.waitJS("the new root", `document.querySelector('#roots .root[data-root="`+root+`"]')`)
	if got := admin.text(`#roots .root[data-root="` + root + `"]`); !strings.Contains(got, "bob") {
		t.Errorf("root row %q", got)
	}
	admin.click(`#route-network input[value=demo]`)
	admin.clickNav(`#route-network button[type=submit]`)
	admin.waitJS("the saved switch", `document.querySelector('#route-network input[value=demo]')?.checked`)
	// Bob now gets the root's folders in the start form.
	bob.open("/")
	if bob.count(`#ws-path option[value="`+filepath.Join(root, "notes")+`"]`) != 1 {
		t.Error("bob's start form does not offer the new root's folder")
	}
	admin.shot("settings-sandbox")
}

// lastTerm is the text of the last bash card's terminal.
func lastTerm(b *browser) string {
	b.t.Helper()
	return eval[string](b, `[...document.querySelectorAll(".tool-bash .term")].at(-1)?.innerText ?? ""`)
}
