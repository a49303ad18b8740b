package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// probeTimeout bounds each start-up check.
const probeTimeout = 10 * time.Second

// landlockABI is the kernel's Landlock ABI version, 0 without Landlock.
func landlockABI() int {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil || v < 0 {
		return 0
	}
	return v
}

// bwrapVersion runs `bwrap --version`.
func bwrapVersion(ctx context.Context, path string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s --version: %v: %s", path, err, bytes.TrimSpace(out))
	}
	return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), "bubblewrap")), nil
}

// selfTest runs a command through the sandbox in a throwaway workspace and
// checks that it ran confined: it can write its workspace and cannot write
// the parent directory. A sandbox that cannot start or does not confine is
// not used.
func (s *Sandbox) selfTest(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "harness-sandbox-probe-")
	if err != nil {
		return fmt.Errorf("probe directory: %w", err)
	}
	defer os.RemoveAll(dir)
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		return fmt.Errorf("probe workspace: %w", err)
	}
	if err := s.Own(ws); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	sh, err := exec.LookPath("sh")
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	cmd, err := s.command(Process{
		Path: sh, Args: []string{"-c", `echo ok > inside && { echo escaped > ../outside; } 2>/dev/null; echo done`},
		Workspace: ws, Env: []string{"PATH=/usr/bin:/bin"},
	})
	if err != nil {
		return err
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("the probe command did not finish in %s", probeTimeout)
	}
	if err != nil {
		return fmt.Errorf("probe command: %v: %s", err, bytes.TrimSpace(out.Bytes()))
	}
	if _, err := os.Stat(filepath.Join(ws, "inside")); err != nil {
		return fmt.Errorf("the probe command could not write its workspace: %s", bytes.TrimSpace(out.Bytes()))
	}
	if _, err := os.Stat(filepath.Join(dir, "outside")); err == nil {
		return fmt.Errorf("the probe command wrote outside its workspace: not confined")
	}
	return nil
}
