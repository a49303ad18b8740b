package e2e_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"harness/internal/app"
	"harness/internal/config"
	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/testkit/apptest"
)

const chromiumPath = "/usr/bin/chromium"

var (
	screenshots = flag.Bool("screenshots", false, "rewrite e2e/testdata/screenshots/*.png")
	skipReason  string
)

func TestMain(m *testing.M) {
	flag.Parse()
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("HARNESS_E2E_REQUIRE_CHROMIUM") == "1" {
			fmt.Fprintf(os.Stderr, "e2e: %s is required (HARNESS_E2E_REQUIRE_CHROMIUM=1) but missing: %v\n", chromiumPath, err)
			os.Exit(1)
		}
		skipReason = "!!! SKIPPING BROWSER TESTS: " + chromiumPath + " is not installed (apt-get install chromium; CI sets HARNESS_E2E_REQUIRE_CHROMIUM=1) !!!"
		fmt.Fprintln(os.Stderr, skipReason)
	}
	os.Exit(m.Run())
}

// requireBrowser skips (loudly) when Chromium is absent outside CI.
func requireBrowser(t *testing.T) {
	t.Helper()
	if skipReason != "" {
		t.Skip(skipReason)
	}
}

// server is the real app on a loopback port.
type server struct {
	t   *testing.T
	app *apptest.App
}

type serverOpts struct {
	providers []llm.Provider
	demo      []fake.Option
	// config adjusts the server's configuration (workspace roots, ...).
	config func(*config.Config)
}

// Passwords of the users every server has.
const (
	adminName = "admin"
	adminPass = "admin-password"
	bobName   = "bob"
	bobPass   = "bob-password"
)

func newServer(t *testing.T, o serverOpts) *server {
	t.Helper()
	requireBrowser(t)
	demo := o.demo
	if demo == nil {
		demo = []fake.Option{fake.WithChunkDelay(3 * time.Millisecond)}
	}
	a := apptest.StartApp(t, func(c *config.Config) {
		c.AdminPassword = adminPass
		if o.config != nil {
			o.config(c)
		}
	}, app.Options{
		Providers:   o.providers,
		DemoOptions: demo,
	})
	if err := a.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Auth.CreateUser(t.Context(), bobName, bobPass, false); err != nil {
		t.Fatal(err)
	}
	return &server{t: t, app: a}
}

// browser is one Chromium (its own profile: cookies, storage) with a tab.
type browser struct {
	t   *testing.T
	srv *server
	ctx context.Context

	mu     sync.Mutex
	errors []string
	// allowed are "status url" pairs of error responses a test expects
	// (an error page it opens on purpose), which the browser logs.
	allowed map[string]bool
}

// expectHTTPError tells the console check that opening path answers
// status on purpose.
func (b *browser) expectHTTPError(path string, status int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.allowed == nil {
		b.allowed = map[string]bool{}
	}
	b.allowed[fmt.Sprintf("%d %s%s", status, b.srv.app.URL, path)] = true
}

func (b *browser) expected(m chromedp.ConsoleMessage) bool {
	const prefix = "Failed to load resource: the server responded with a status of "
	if !strings.HasPrefix(m.Text, prefix) {
		return false
	}
	status, _, _ := strings.Cut(strings.TrimPrefix(m.Text, prefix), " ")
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.allowed[status+" "+m.URL]
}

// newBrowser starts a Chromium of its own, with a fresh profile, on srv,
// and fails the test on any console error or uncaught exception in it.
func (s *server) newBrowser() *browser {
	t := s.t
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath),
		chromedp.NoSandbox,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		cancelAlloc()
		t.Fatalf("start chromium: %v", err)
	}
	b := &browser{t: t, srv: s, ctx: ctx}
	b.watchConsole(ctx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, e := range b.errors {
			t.Errorf("browser console: %s", e)
		}
	})
	return b
}

// tab opens another tab in the same browser context (same login).
func (b *browser) tab() *browser {
	b.t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	if err := chromedp.Do(ctx); err != nil {
		b.t.Fatal(err)
	}
	nb := &browser{t: b.t, srv: b.srv, ctx: ctx}
	nb.watchConsole(ctx)
	b.t.Cleanup(func() {
		cancel()
		nb.mu.Lock()
		defer nb.mu.Unlock()
		for _, e := range nb.errors {
			b.t.Errorf("browser console (tab 2): %s", e)
		}
	})
	return nb
}

func (b *browser) watchConsole(ctx context.Context) {
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			if (m.Type == chromedp.ConsoleError || m.IsException()) && !b.expected(m) {
				b.mu.Lock()
				b.errors = append(b.errors, fmt.Sprintf("%s %s:%d %s", m.Type, m.URL, m.Line+1, m.Text))
				b.mu.Unlock()
			}
		}
	}()
}

// do runs steps with a deadline.
func (b *browser) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.fatal(err)
	}
}

// fatal fails with a screenshot of the moment for the log.
func (b *browser) fatal(err error) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	if png, serr := chromedp.Run(ctx, chromedp.CaptureScreenshot()); serr == nil {
		name := filepath.Join(os.TempDir(), strings.NewReplacer("/", "_", " ", "_").Replace(b.t.Name())+".png")
		if os.WriteFile(name, png, 0o644) == nil {
			b.t.Logf("screenshot of the failure: %s", name)
		}
	}
	if html, herr := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('.main')?.innerText?.slice(-1500) ?? document.body.innerText.slice(-1500)`)); herr == nil {
		b.t.Logf("page text (end):\n%s", html)
	}
	b.t.Fatal(err)
}

func (b *browser) open(path string) {
	b.t.Helper()
	b.do(chromedp.Navigate(b.srv.app.URL + path))
}

// status opens path and returns the HTTP status of the response.
func (b *browser) status(path string) int64 {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	res, err := chromedp.Run(ctx, chromedp.NavigateResponse(b.srv.app.URL+path))
	if err != nil {
		b.fatal(err)
	}
	return res.Status
}

func (b *browser) login(name, pass string) {
	b.t.Helper()
	b.open("/login")
	b.do(
		chromedp.SetValue(chromedp.ID("name"), name),
		chromedp.SetValue(chromedp.ID("password"), pass),
		chromedp.Submit(chromedp.ID("password")),
		chromedp.WaitVisible(chromedp.ID("sidebar")),
	)
}

// eval evaluates JavaScript and returns its value.
func eval[T any](b *browser, js string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		b.fatal(fmt.Errorf("eval %s: %w", js, err))
	}
	return v
}

// waitJS waits until the expression is truthy.
func (b *browser) waitJS(what, expr string, timeout ...time.Duration) {
	b.t.Helper()
	d := 20 * time.Second
	if len(timeout) > 0 {
		d = timeout[0]
	}
	ctx, cancel := context.WithTimeout(b.ctx, d+5*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`!!(`+expr+`)`, chromedp.WithPollingTimeout(d), chromedp.WithPollingInterval(25*time.Millisecond))); err != nil {
		b.fatal(fmt.Errorf("waiting for %s: %w", what, err))
	}
}

func (b *browser) visible(sel string) {
	b.t.Helper()
	b.do(chromedp.WaitVisible(chromedp.CSS(sel)))
}

func (b *browser) click(sel string) {
	b.t.Helper()
	b.do(chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
}

// clickNav clicks something that loads a new page and waits for the load.
func (b *browser) clickNav(sel string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))); err != nil {
		b.fatal(err)
	}
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	return eval[string](b, `document.querySelector(`+jsString(sel)+`)?.innerText ?? ""`)
}

func (b *browser) count(sel string) int {
	b.t.Helper()
	return eval[int](b, `document.querySelectorAll(`+jsString(sel)+`).length`)
}

// newSession starts a session from the list page (mode: ask, auto,
// read-only) and waits for its chat page.
func (b *browser) newSession(mode string) string {
	b.t.Helper()
	b.open("/")
	b.do(
		chromedp.SetValue(chromedp.ID("new-mode"), mode),
		chromedp.Submit(chromedp.ID("new-prompt")),
		chromedp.WaitVisible(chromedp.ID("composer-input")),
	)
	b.waitSynced()
	return eval[string](b, `document.getElementById("chat").dataset.session`)
}

// waitSynced waits until the socket finished its replay.
func (b *browser) waitSynced() {
	b.t.Helper()
	b.waitJS("the live transcript to attach", `document.getElementById("chat")?.dataset.synced !== undefined`)
}

// send types a message in the composer and presses Enter.
func (b *browser) send(text string) {
	b.t.Helper()
	b.do(
		chromedp.SetValue(chromedp.ID("composer-input"), text),
		chromedp.Focus(chromedp.ID("composer-input")),
		pressEnter(0),
	)
	b.waitJS("the composer to clear", `document.getElementById("composer-input").value === ""`)
}

// waitIdle waits until the agent is idle again (status dot) after work.
func (b *browser) waitIdle(timeout ...time.Duration) {
	b.t.Helper()
	b.waitJS("the agent to go idle", `document.getElementById("agent-status").dataset.status === "idle"`, timeout...)
}

// waitTurns waits until n turns have ended (their usage rows).
func (b *browser) waitTurns(n int, timeout ...time.Duration) {
	b.t.Helper()
	b.waitJS(fmt.Sprintf("%d finished turns", n), fmt.Sprintf(`document.querySelectorAll(".usage-turn, .error-row, .notice-aborted").length >= %d`, n), timeout...)
}

// shot saves a screenshot under testdata/screenshots with -screenshots.
func (b *browser) shot(name string) {
	b.t.Helper()
	if !*screenshots {
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.fatal(err)
	}
	dir := filepath.Join("testdata", "screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// pressEnter sends the Enter key to the focused element without the
// character event (the composer handles Enter on keydown), with optional
// modifiers (2 = Ctrl).
func pressEnter(modifiers int64) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		for _, typ := range []input.DispatchKeyEventType{input.DispatchKeyEventTypeRawKeyDown, input.DispatchKeyEventTypeKeyUp} {
			_, err := cdp.Call(ctx, t, input.DispatchKeyEvent, input.DispatchKeyEventParams{
				Type: typ, Key: "Enter", Code: "Enter", Modifiers: modifiers,
				WindowsVirtualKeyCode: 13, NativeVirtualKeyCode: 13,
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
}

func jsString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// noDuplicateIDs fails when two elements share an id (a replayed event
// applied twice would do that).
func (b *browser) noDuplicateIDs() {
	b.t.Helper()
	dup := eval[string](b, `(() => { const seen = new Set(); for (const el of document.querySelectorAll("[id]")) { if (seen.has(el.id)) return el.id; seen.add(el.id); } return ""; })()`)
	if dup != "" {
		b.t.Errorf("duplicate element id %q", dup)
	}
}
