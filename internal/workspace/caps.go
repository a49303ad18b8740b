package workspace

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"harness/internal/llm"
	"harness/internal/session"
	"harness/internal/tools"
)

// Tool errors of the session caps.
const (
	NameDiskQuota = "DiskQuotaError"
	CodeDiskQuota = "DISK_QUOTA"
	NameMemoryCap = "MemoryCapError"
	CodeMemoryCap = "MEMORY_CAP"
)

// quota is the workspace quota in bytes.
func (m *Manager) quota() int64 { return int64(m.d.Sandbox.Limits().DiskBytes) }

// fileSizeCap is the RLIMIT_FSIZE for session id's next process: the quota
// left by the last measurement (1 byte when none is left: files cannot
// grow, but the process can still delete), 0 (the limit) when unknown.
func (m *Manager) fileSizeCap(id string) uint64 {
	used, ok := m.meter.last(id)
	if !ok {
		return 0
	}
	left := m.quota() - used
	if left < 1 {
		return 1
	}
	return uint64(left)
}

// writes reports whether a call may write the workspace (every access but
// read, interact and network; unknown access counts, failing closed).
func writes(a tools.Access) bool {
	return a != tools.AccessRead && a != tools.AccessInteract && a != tools.AccessNetwork
}

// CapsHook wraps each tool body of session sessionID with the session's
// caps: a write tool is refused while the workspace is at or over its
// quota (a shell still runs, unable to grow any file, so files can be
// deleted); the use is measured after every write or exec call and a call
// that filled the quota says so; a call during which the kernel killed a
// process of the session for its memory cap is an error that says so.
func (m *Manager) CapsHook(sessionID, workspace string) tools.ExecuteHook {
	dirs := []string{workspace, filepath.Join(m.scratch, sessionID)}
	return func(ctx context.Context, call *tools.Call, next func(context.Context) (tools.Result, error)) (tools.Result, error) {
		if !writes(call.Access) {
			return m.watchMemory(ctx, sessionID, next)
		}
		used, ok := m.meter.cached(sessionID)
		if !ok {
			used = m.meter.measure(ctx, sessionID, dirs...)
		}
		quota := m.quota()
		if used >= quota && call.Access == tools.AccessWrite {
			return tools.Result{}, tools.Errorf(NameDiskQuota, CodeDiskQuota, "%s", overQuota(used, quota))
		}
		r, err := m.counted(ctx, sessionID, next)
		after := m.meter.measure(context.WithoutCancel(ctx), sessionID, dirs...)
		if err == nil && after >= quota {
			r.Content = append(r.Content, llm.Text("\n["+overQuota(after, quota)+"]"))
		}
		return r, err
	}
}

// counted runs a write or exec call's body counted as running, so no
// other call reuses a figure measured before it ends.
func (m *Manager) counted(ctx context.Context, sessionID string, next func(context.Context) (tools.Result, error)) (tools.Result, error) {
	m.meter.start(sessionID)
	defer m.meter.end(sessionID)
	return m.watchMemory(ctx, sessionID, next)
}

// overQuota is the message of a workspace at or over its quota.
func overQuota(used, quota int64) string {
	return fmt.Sprintf("the workspace uses %s of its %s quota; free space (delete files) to continue: until then files cannot be written or grow",
		sizeText(used), sizeText(quota))
}

// watchMemory runs the body and turns its result into a coded error when
// the session's memory cap killed a process meanwhile (with parallel
// calls, each running call reports it: the cap is the session's).
func (m *Manager) watchMemory(ctx context.Context, sessionID string, next func(context.Context) (tools.Result, error)) (tools.Result, error) {
	sb := m.d.Sandbox
	before := sb.OOMKills(sessionID)
	r, err := next(ctx)
	if sb.OOMKills(sessionID) == before || err != nil {
		return r, err
	}
	msg := fmt.Sprintf("[killed: the session's memory cap (%s) was reached; use less memory at once (fewer or smaller processes)]",
		sizeText(int64(sb.Limits().MemoryBytes)))
	r.Content = append(r.Content, llm.Text("\n"+msg))
	r.IsError = true
	r.Error = &session.ToolError{Name: NameMemoryCap, Code: CodeMemoryCap}
	return r, nil
}

// sizeText is a size for messages ("2 GiB", "1.5 GiB").
func sizeText(n int64) string { return strings.Replace(humanBytes(n), ".0 ", " ", 1) }
