package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"harness/internal/tools"
)

// readerGrace bounds how long output pipes may stay open after the process
// group is gone (a daemonized grandchild can hold them).
const readerGrace = 2 * time.Second

type bashArgs struct {
	Command     string `json:"command"`
	Description string `json:"description"`
	TimeoutMs   int64  `json:"timeout_ms"`
}

// BashMeta is the presentation data of a bash result.
type BashMeta struct {
	ExitCode   *int   `json:"exitCode"` // nil when killed by a signal
	DurationMs int64  `json:"durationMs"`
	TimedOut   bool   `json:"timedOut"`
	Signal     string `json:"signal,omitempty"`
	Truncated  bool   `json:"truncated"`
}

func bashTool(opts Options) tools.Definition {
	return tools.Definition{
		Name: ToolBash,
		Description: fmt.Sprintf(`Run a shell command with bash in the session workspace and return its output.

Each call starts a fresh "bash -c" process in the workspace directory: no shell state (cwd, variables, aliases) carries over between calls, so chain dependent steps with && in one command. Stdin is empty; do not run interactive programs. Background processes do not outlive the call.

The result is stdout, then "[stderr]" and stderr if there was any, or "(no output)". Trailing marker lines report "[timed out after Nms]", "[killed by signal: X]" or "[exit code: N]" (no marker means exit code 0) — always check them; a non-zero exit is reported in-band, not as a tool error. Output beyond %d bytes keeps its head and tail with a "[... output truncated ...]" marker; filter noisy output (grep, head, tail) instead of printing everything.

The default timeout is %d ms (timeout_ms may raise it up to %d ms); on timeout the whole process group is terminated. Prefer the read, write, edit, glob and grep tools for files.`,
			opts.BashOutputCap, opts.BashTimeout.Milliseconds(), opts.BashMaxTimeout.Milliseconds()),
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "command": {"type": "string", "minLength": 1, "description": "The bash command to run."},
    "description": {"type": "string", "description": "A short (5-10 word) label of what the command does, shown to the user."},
    "timeout_ms": {"type": "integer", "minimum": 1, "description": "Timeout in milliseconds (default ` + fmt.Sprint(opts.BashTimeout.Milliseconds()) + `, max ` + fmt.Sprint(opts.BashMaxTimeout.Milliseconds()) + `)."}
  },
  "required": ["command", "description"],
  "additionalProperties": false
}`),
		Access: tools.AccessExec,
		Execute: func(ctx context.Context, call *tools.Call) (tools.Result, error) {
			args, err := decodeArgs[bashArgs](call)
			if err != nil {
				return tools.Result{}, err
			}
			return runBash(ctx, call, opts, args)
		},
		Preview: previewBash,
	}
}

func runBash(ctx context.Context, call *tools.Call, opts Options, args bashArgs) (tools.Result, error) {
	_, ws, err := workspaceRoot(call.Env.Workspace())
	if err != nil {
		return tools.Result{}, err
	}
	timeout := opts.BashTimeout
	if args.TimeoutMs > 0 {
		timeout = time.Duration(args.TimeoutMs) * time.Millisecond
	}
	timeout = min(timeout, opts.BashMaxTimeout)

	cmd, err := call.Env.Command(ctx, tools.Process{
		Path: opts.BashPath, Args: []string{"-c", args.Command},
		Env: toolEnv(opts.Environ, opts.ExtraEnv, ws),
	})
	if err != nil {
		return tools.Result{}, sandboxError(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return tools.Result{}, fmt.Errorf("create stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return tools.Result{}, fmt.Errorf("create stderr pipe: %w", err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW

	start := time.Now()
	err = cmd.Start()
	outW.Close() // the child has its own copies
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return tools.Result{}, fmt.Errorf("start bash: %w", err)
	}
	pgid := cmd.Process.Pid

	stdout, stderr := newCapture(opts.BashOutputCap), newCapture(opts.BashOutputCap)
	var readers sync.WaitGroup
	readers.Add(2)
	go pump(&readers, outR, stdout, func(s string) { call.Output("stdout", s) })
	go pump(&readers, errR, stderr, func(s string) { call.Output("stderr", s) })

	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var waitErr error
	timedOut := false
	select {
	case waitErr = <-exited:
	case <-timer.C:
		timedOut = true
		terminateGroup(pgid, opts.BashKillGrace)
		waitErr = <-exited
	case <-ctx.Done():
		terminateGroup(pgid, opts.BashKillGrace)
		waitErr = <-exited
	}
	// Nothing of the call outlives it, and stragglers would hold the pipes.
	killGroup(pgid)
	waitReaders(&readers, outR, errR)
	duration := time.Since(start)

	meta := BashMeta{DurationMs: duration.Milliseconds(), TimedOut: timedOut}
	var markers []string
	if timedOut {
		markers = append(markers, fmt.Sprintf("[timed out after %dms]", timeout.Milliseconds()))
	}
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) {
		return tools.Result{}, fmt.Errorf("wait for bash: %w", waitErr)
	}
	if st, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && st.Signaled() {
		meta.Signal = signalName(st.Signal())
		markers = append(markers, fmt.Sprintf("[killed by signal: %s]", meta.Signal))
	} else {
		code := cmd.ProcessState.ExitCode()
		meta.ExitCode = &code
		if code != 0 {
			markers = append(markers, fmt.Sprintf("[exit code: %d]", code))
		}
	}

	outBudget, errBudget := splitBudget(opts.BashOutputCap, stdout.total, stderr.total)
	outText, outCut := stdout.render(outBudget)
	errText, errCut := stderr.render(errBudget)
	meta.Truncated = outCut || errCut
	r := tools.TextResult(formatBashOutput(outText, errText, markers))
	r.Meta = mustJSON(meta)
	return r, nil
}

// formatBashOutput lays out stdout, "[stderr]" + stderr, and marker lines.
func formatBashOutput(stdout, stderr string, markers []string) string {
	var sb strings.Builder
	newline := func() {
		if sb.Len() > 0 && !strings.HasSuffix(sb.String(), "\n") {
			sb.WriteByte('\n')
		}
	}
	sb.WriteString(stdout)
	if stderr != "" {
		newline()
		sb.WriteString("[stderr]\n")
		sb.WriteString(stderr)
	}
	if sb.Len() == 0 {
		sb.WriteString("(no output)")
	}
	for _, m := range markers {
		newline()
		sb.WriteString(m)
	}
	return sb.String()
}

// pump copies a pipe into its capture and the live output, never splitting
// a UTF-8 sequence between two live chunks.
func pump(wg *sync.WaitGroup, r io.Reader, c *capture, live func(string)) {
	defer wg.Done()
	buf := make([]byte, 32*1024)
	var carry []byte
	for {
		n, err := r.Read(buf)
		if n > 0 {
			c.Write(buf[:n])
			data := append(carry, buf[:n]...)
			cut := completeUTF8(data)
			if cut > 0 {
				live(string(data[:cut]))
			}
			carry = append([]byte(nil), data[cut:]...)
		}
		if err != nil {
			break
		}
	}
	if len(carry) > 0 {
		live(string(carry))
	}
}

// waitReaders waits for the pipe readers, closing the pipes if something
// outside the group still holds them after readerGrace.
func waitReaders(wg *sync.WaitGroup, pipes ...*os.File) {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(readerGrace):
	}
	for _, p := range pipes {
		p.Close()
	}
	<-done
}

// toolEnv builds the minimal environment of tool processes. Secrets never
// reach them: any variable whose name contains KEY, TOKEN, SECRET or
// PASSWORD is dropped, wherever it comes from.
func toolEnv(host, extra []string, workspace string) []string {
	keep := map[string]bool{"PATH": true, "HOME": true, "LANG": true}
	vars := map[string]string{}
	var order []string
	set := func(kv string) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || secretName(k) {
			return
		}
		if _, seen := vars[k]; !seen {
			order = append(order, k)
		}
		vars[k] = v
	}
	for _, kv := range host {
		if k, _, _ := strings.Cut(kv, "="); keep[k] {
			set(kv)
		}
	}
	if _, ok := vars["PATH"]; !ok {
		set("PATH=/usr/local/bin:/usr/bin:/bin")
	}
	set("TERM=dumb")
	set("HARNESS_SESSION_WORKSPACE=" + workspace)
	for _, kv := range extra {
		set(kv)
	}
	env := make([]string, 0, len(order))
	for _, k := range order {
		env = append(env, k+"="+vars[k])
	}
	return env
}

func secretName(name string) bool {
	up := strings.ToUpper(name)
	for _, s := range []string{"KEY", "TOKEN", "SECRET", "PASSWORD"} {
		if strings.Contains(up, s) {
			return true
		}
	}
	return false
}

var signalNames = map[syscall.Signal]string{
	syscall.SIGABRT: "SIGABRT", syscall.SIGALRM: "SIGALRM", syscall.SIGBUS: "SIGBUS",
	syscall.SIGFPE: "SIGFPE", syscall.SIGHUP: "SIGHUP", syscall.SIGILL: "SIGILL",
	syscall.SIGINT: "SIGINT", syscall.SIGKILL: "SIGKILL", syscall.SIGPIPE: "SIGPIPE",
	syscall.SIGQUIT: "SIGQUIT", syscall.SIGSEGV: "SIGSEGV", syscall.SIGTERM: "SIGTERM",
	syscall.SIGUSR1: "SIGUSR1", syscall.SIGUSR2: "SIGUSR2", syscall.SIGXCPU: "SIGXCPU",
}

func signalName(s syscall.Signal) string {
	if n, ok := signalNames[s]; ok {
		return n
	}
	return fmt.Sprintf("signal %d", int(s))
}
