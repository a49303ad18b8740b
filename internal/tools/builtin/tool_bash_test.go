package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"harness/internal/llm"
	"harness/internal/session"
	"harness/internal/tools"
)

func bashArgsFor(cmd string) map[string]any {
	return map[string]any{"command": cmd, "description": "test command"}
}

func TestBashOutputFormat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, cmd, want string
		exit            int
	}{
		{"stdout", "echo hello", "hello\n", 0},
		{"exit code", "echo hi; exit 3", "hi\n[exit code: 3]", 3},
		{"stderr", "echo out; echo err >&2", "out\n[stderr]\nerr\n", 0},
		{"stderr only, failing", "echo bad >&2; exit 1", "[stderr]\nbad\n[exit code: 1]", 1},
		{"no output", "true", "(no output)", 0},
		{"no output, failing", "exit 7", "(no output)\n[exit code: 7]", 7},
		{"no trailing newline", "printf abc; exit 2", "abc\n[exit code: 2]", 2},
		{"stdin is empty", "cat; echo done", "done\n", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, Options{})
			r := h.run(ToolBash, bashArgsFor(tt.cmd))
			if got := mustOK(t, r); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
			m := decodeMeta[BashMeta](t, r)
			if m.ExitCode == nil || *m.ExitCode != tt.exit || m.TimedOut || m.Signal != "" || m.Truncated {
				t.Fatalf("meta %+v", m)
			}
		})
	}
}

func TestBashRunsInWorkspace(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{})
	real, _ := filepath.EvalSymlinks(h.ws)
	if got := mustOK(t, h.run(ToolBash, bashArgsFor("pwd; touch made-here"))); got != real+"\n" {
		t.Fatalf("pwd = %q, want %q", got, real)
	}
	if _, err := os.Stat(filepath.Join(h.ws, "made-here")); err != nil {
		t.Fatal(err)
	}
}

func TestBashTruncatesHeadAndTail(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{BashOutputCap: 1000})
	r := h.run(ToolBash, bashArgsFor("seq 1 10000"))
	text := mustOK(t, r)
	var full strings.Builder
	for i := 1; i <= 10000; i++ {
		fmt.Fprintf(&full, "%d\n", i)
	}
	head, tail := full.String()[:500], full.String()[full.Len()-500:]
	marker := fmt.Sprintf("[... output truncated: %d bytes omitted ...]\n", full.Len()-1000)
	if !strings.HasPrefix(text, head) || !strings.HasSuffix(text, tail) || !strings.Contains(text, marker) {
		t.Fatalf("truncated output wrong:\n%s", text)
	}
	if m := decodeMeta[BashMeta](t, r); !m.Truncated {
		t.Fatal("meta.truncated not set")
	}
}

// The default cap keeps 64,000 bytes shared between the streams.
func TestBashDefaultCapSharedBetweenStreams(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{})
	text := mustOK(t, h.run(ToolBash, bashArgsFor("head -c 100000 /dev/zero | tr '\\0' x; head -c 100000 /dev/zero | tr '\\0' z >&2")))
	outs, errs := strings.Count(text, "x"), strings.Count(text, "z")
	// Both streams are big: each keeps half of the budget.
	if outs != 32000 || errs != 32000 {
		t.Fatalf("kept %d stdout and %d stderr bytes", outs, errs)
	}
	if strings.Count(text, "output truncated") != 2 {
		t.Fatalf("want a marker per stream:\n%.200s", text)
	}
}

func TestBashTimeoutMarker(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{})
	args := bashArgsFor("echo before; sleep 30")
	args["timeout_ms"] = 300
	r := h.run(ToolBash, args)
	text := mustOK(t, r)
	if text != "before\n[timed out after 300ms]\n[killed by signal: SIGTERM]" {
		t.Fatalf("got %q", text)
	}
	m := decodeMeta[BashMeta](t, r)
	if !m.TimedOut || m.Signal != "SIGTERM" || m.ExitCode != nil {
		t.Fatalf("meta %+v", m)
	}
}

// timeout_ms above the cap is clamped.
func TestBashTimeoutCapped(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{BashMaxTimeout: 200 * time.Millisecond})
	args := bashArgsFor("sleep 30")
	args["timeout_ms"] = 600000
	if text := mustOK(t, h.run(ToolBash, args)); !strings.Contains(text, "[timed out after 200ms]") {
		t.Fatalf("got %q", text)
	}
}

// startBash runs a bash call in the background of the test and returns the
// process group the command prints on its first line, plus the result.
func startBash(t *testing.T, h *harness, ctx context.Context, cmd string) (pgid int, done chan tools.Result) {
	t.Helper()
	done = make(chan tools.Result, 1)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		if _, err := h.p.Run(ctx, []llm.ContentBlock{tc("b1", ToolBash, mustMarshal(bashArgsFor(cmd)))}, 1, 1, h.env, newFakeSink(h.env.rec)); err != nil {
			t.Error(err)
		}
		done <- h.env.rec.commits()["b1"]
	}()
	for {
		var out strings.Builder
		for _, e := range h.env.rec.emits(session.TypeToolOutput) {
			if o := e.Data.(session.ToolOutput); o.Stream == "stdout" {
				out.WriteString(o.Text)
			}
		}
		if line, _, ok := strings.Cut(out.String(), "\n"); ok {
			pid, err := strconv.Atoi(line)
			if err != nil {
				t.Fatalf("first line %q is not a pid", line)
			}
			return pid, done
		}
		select {
		case <-finished:
			t.Fatal("bash finished before printing its pid")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func mustMarshal(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// survivorDelay is how long a background child of a test command waits
// before it leaves a mark; a killed group never leaves it.
const survivorDelay = "0.8"

// noSurvivor waits past survivorDelay and fails when the command's
// background child is still alive to leave its mark. It does not depend on
// process ids, which a sandbox's PID namespace keeps from the host.
func noSurvivor(t *testing.T, ws string) {
	t.Helper()
	time.Sleep(1200 * time.Millisecond) // proves a negative: past survivorDelay, no mark
	if _, err := os.Stat(filepath.Join(ws, "survived")); err == nil {
		t.Fatal("a process of the call outlived it and wrote its mark")
	}
}

// Cancelling the call kills the whole process group promptly.
func TestBashCancelKillsGroup(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, cmd string
		grace     time.Duration
	}{
		{"sleep", "echo $$; (sleep " + survivorDelay + "; touch survived) & sleep 30", 0},
		// The shell and a background child ignore SIGTERM: SIGKILL after the grace.
		{"ignores TERM", "trap '' TERM; echo $$; (trap '' TERM; sleep " + survivorDelay + "; touch survived) & sleep 30; wait", 300 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, Options{BashKillGrace: tt.grace})
			ctx, cancel := context.WithCancel(context.Background())
			_, done := startBash(t, h, ctx, tt.cmd)
			cancel()
			select {
			case r := <-done:
				if errCode(r) != session.CodeToolAborted {
					t.Fatalf("result %+v", r)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("cancel did not return within 5 s")
			}
			noSurvivor(t, h.ws)
		})
	}
}

// Background processes do not outlive the call.
func TestBashKillsStragglers(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{})
	text := mustOK(t, h.run(ToolBash, bashArgsFor("(sleep "+survivorDelay+"; touch survived) & echo started")))
	if !strings.Contains(text, "started") {
		t.Fatalf("output %q", text)
	}
	noSurvivor(t, h.ws)
}

// Live output reaches tool/output events in order and completely, batched
// (fewer events than writes), before the result.
func TestBashLiveOutput(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{})
	r := h.run(ToolBash, bashArgsFor("for i in $(seq 1 40); do echo line $i; sleep 0.01; done; echo warn >&2"))
	mustOK(t, r)
	var stdout, stderr strings.Builder
	events := h.env.rec.emits(session.TypeToolOutput)
	for _, e := range events {
		o := e.Data.(session.ToolOutput)
		if o.CallID != "call_1" {
			t.Fatalf("event for %q", o.CallID)
		}
		if o.Stream == "stdout" {
			stdout.WriteString(o.Text)
		} else {
			stderr.WriteString(o.Text)
		}
	}
	var want strings.Builder
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	if stdout.String() != want.String() || stderr.String() != "warn\n" {
		t.Fatalf("live stdout %q stderr %q", stdout.String(), stderr.String())
	}
	if len(events) >= 41 {
		t.Fatalf("%d events for 41 writes: not batched", len(events))
	}
	all := h.env.rec.all()
	if all[len(all)-1].Kind != "commit" {
		t.Fatal("output after the result")
	}
}

// Secrets in the host environment never reach tool processes.
func TestBashEnvironmentHasNoSecrets(t *testing.T) {
	t.Setenv("FOO_API_KEY", "sk-very-secret")
	t.Setenv("GITHUB_TOKEN", "ghp-secret")
	t.Setenv("HARMLESS_BUT_NOT_LISTED", "x")
	h := newHarness(t, Options{ExtraEnv: []string{"MY_PASSWORD=hunter2", "EXTRA_OK=yes"}})
	text := mustOK(t, h.run(ToolBash, bashArgsFor("env")))
	for _, bad := range []string{"FOO_API_KEY", "sk-very-secret", "GITHUB_TOKEN", "ghp-secret", "MY_PASSWORD", "hunter2", "HARMLESS_BUT_NOT_LISTED"} {
		if strings.Contains(text, bad) {
			t.Fatalf("environment leaks %s:\n%s", bad, text)
		}
	}
	real, _ := filepath.EvalSymlinks(h.ws)
	for _, good := range []string{"PATH=", "TERM=dumb", "HARNESS_SESSION_WORKSPACE=" + real, "EXTRA_OK=yes"} {
		if !strings.Contains(text, good) {
			t.Fatalf("environment lacks %s:\n%s", good, text)
		}
	}
}

func TestBashInvalidArgs(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{})
	for _, args := range []string{`{"command":"ls"}`, `{"description":"x"}`, `{"command":"","description":"x"}`,
		`{"command":"ls","description":"x","timeout_ms":"soon"}`, `{"command":"ls","description":"x","timeout_ms":0}`, `ls -la`} {
		mustCode(t, h.run(ToolBash, args), tools.CodeInvalidArgs)
	}
}

func TestSplitBudget(t *testing.T) {
	t.Parallel()
	tests := []struct {
		out, err         int64
		wantOut, wantErr int
	}{
		{10, 10, 10, 10},
		{1000, 5, 95, 5},
		{5, 1000, 5, 95},
		{1000, 1000, 50, 50},
		{0, 1000, 0, 100},
	}
	for _, tt := range tests {
		o, e := splitBudget(100, tt.out, tt.err)
		if o != tt.wantOut || e != tt.wantErr {
			t.Errorf("splitBudget(100, %d, %d) = %d, %d; want %d, %d", tt.out, tt.err, o, e, tt.wantOut, tt.wantErr)
		}
	}
}

func TestCaptureKeepsRunesWhole(t *testing.T) {
	t.Parallel()
	c := newCapture(11)
	c.Write([]byte(strings.Repeat("é", 20)))
	text, cut := c.render(11)
	if !cut || strings.ContainsRune(text, '\uFFFD') || !strings.HasPrefix(text, "éé") || !strings.HasSuffix(text, "éé") {
		t.Fatalf("render %q", text)
	}
	if n := completeUTF8([]byte("aé")[:2]); n != 1 {
		t.Fatalf("completeUTF8 = %d", n)
	}
}
