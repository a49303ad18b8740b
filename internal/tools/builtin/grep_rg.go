package builtin

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	"harness/internal/sandbox"
	"harness/internal/tools"
	"harness/internal/tools/builtin/globpat"
)

// rgMessage is the part of a `rg --json` line the grep tool needs.
type rgMessage struct {
	Type string `json:"type"`
	Data struct {
		Path       rgText `json:"path"`
		Lines      rgText `json:"lines"`
		LineNumber int    `json:"line_number"`
	} `json:"data"`
}

// rgText is ripgrep's {"text": ...} or {"bytes": base64} value.
type rgText struct {
	Text  string `json:"text"`
	Bytes string `json:"bytes"`
}

func (t rgText) String() string {
	if t.Bytes != "" {
		if b, err := base64.StdEncoding.DecodeString(t.Bytes); err == nil {
			return string(b)
		}
	}
	return t.Text
}

// grepRipgrep searches with ripgrep, run in the agent's sandbox with the
// workspace read-only. It does not follow symlinks (rg's default). When the
// sandbox refuses processes, the pure Go backend searches instead.
func grepRipgrep(ctx context.Context, env tools.Env, rg, wsReal string, root wsPath, re *regexp.Regexp, include *globpat.Pattern, limit int) ([]grepMatch, bool, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// --sort path keeps results deterministic (and like the Go backend).
	args := []string{"--json", "--no-config", "--hidden", "--sort", "path", "--glob", "!.git", "--regexp", re.String()}
	if include != nil {
		args = append(args, "--glob", include.String())
	}
	args = append(args, "--", filepath.FromSlash(root.Rel))
	cmd, err := env.Command(ctx, tools.Process{Path: rg, Args: args, Env: toolEnv(nil, nil, wsReal), ReadOnlyWorkspace: true})
	if errors.Is(err, sandbox.ErrUnavailable) {
		return grepGo(ctx, wsReal, root, re, include, limit)
	}
	if err != nil {
		return nil, false, fmt.Errorf("ripgrep: %w", err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, false, fmt.Errorf("ripgrep: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, false, fmt.Errorf("start ripgrep: %w", err)
	}
	// The sandboxed command is its own process group: end all of it when
	// the search is cancelled or has enough.
	stop := context.AfterFunc(ctx, func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	defer stop()
	matches, more, perr := parseRipgrepJSON(stdout, limit)
	if more {
		cancel() // enough: stop ripgrep
	}
	_, _ = io.Copy(io.Discard, stdout)
	werr := cmd.Wait()
	if perr != nil {
		return nil, false, perr
	}
	var exitErr *exec.ExitError
	switch {
	case more || werr == nil:
	case errors.As(werr, &exitErr) && exitErr.ExitCode() == 1: // no matches
	default:
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		return nil, false, fmt.Errorf("ripgrep: %v: %s", werr, strings.TrimSpace(stderr.String()))
	}
	for i := range matches {
		matches[i].file = filepath.ToSlash(filepath.Clean(matches[i].file))
	}
	return matches, more, nil
}

// parseRipgrepJSON reads `rg --json` output until limit matches, reporting
// whether another match followed.
func parseRipgrepJSON(r io.Reader, limit int) ([]grepMatch, bool, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	var out []grepMatch
	for sc.Scan() {
		var m rgMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return nil, false, fmt.Errorf("parse ripgrep output: %w", err)
		}
		if m.Type != "match" {
			continue
		}
		if len(out) == limit {
			return out, true, nil
		}
		out = append(out, grepMatch{file: m.Data.Path.String(), line: m.Data.LineNumber, text: m.Data.Lines.String()})
	}
	if err := sc.Err(); err != nil {
		return nil, false, fmt.Errorf("read ripgrep output: %w", err)
	}
	return out, false, nil
}
