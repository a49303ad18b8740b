package app_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"harness/client"
	"harness/internal/app"
	"harness/internal/config"
	"harness/internal/llm/fake"
	"harness/internal/sandbox"
	"harness/internal/service"
	"harness/internal/session"
	"harness/internal/testkit/apptest"
	"harness/internal/testkit/poll"
)

// capsApp is the real app with HARNESS_SANDBOX_LIMITS=mem=2G,disk=1G.
func capsApp(t *testing.T) *apptest.App {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("!!! SKIPPING: session cgroups need a server running as root !!!")
	}
	return apptest.StartApp(t, func(c *config.Config) {
		c.Sandbox.Limits = sandbox.Limits{MemoryBytes: 2 << 30, DiskBytes: 1 << 30}
	}, app.Options{DemoOptions: []fake.Option{fake.WithChunkDelay(time.Millisecond)}})
}

// TestSessionCapsThroughTheDriver drives bash through the demo model's
// run: rule, as a user who is not an admin: three processes of 0.9 GiB
// under the session's 2 GiB memory cap end in a tool error that names the
// cap; three 512 MiB files under a 1 GiB quota stop at the quota with a
// message that says so, until a file is deleted.
func TestSessionCapsThroughTheDriver(t *testing.T) {
	a := capsApp(t)
	ctx := t.Context()
	bob := a.User(t, "bob", false)

	var st service.SandboxSettings
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, a.URL+"/api/sandbox", nil)
	req.Header.Set("Authorization", "Bearer "+bob.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if st.Sandbox.Cgroups != sandbox.CgroupV1 || st.Sandbox.Limits.MemoryBytes != 2<<30 {
		t.Errorf("/api/sandbox: cgroups %q (%s), memory %d", st.Sandbox.Cgroups, st.Sandbox.CgroupProblem, st.Sandbox.Limits.MemoryBytes)
	}
	if st.Disk.Mechanism != "measured" || st.Disk.QuotaBytes != 1<<30 || st.Disk.Why == "" {
		t.Errorf("/api/sandbox disk: %+v", st.Disk)
	}

	page := browserGet(t, a.URL, "bob", "bob-password", "/settings")
	for _, want := range []string{"cgroups v1 — in force: 2 GiB memory, 512 tasks per session", "1 GiB per workspace, measured: "} {
		if !strings.Contains(page, want) {
			t.Errorf("Settings does not say %q", want)
		}
	}

	s, err := bob.Client.CreateSession(ctx, client.NewSession{Mode: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	hog := `/usr/bin/python3 -c 'import time; b = bytearray(900 << 20); b[::4096] = b"\x01" * (len(b) // 4096); time.sleep(3)'`
	out := runAs(t, a, bob, s.ID, "for i in 1 2 3; do "+hog+" & done; wait; echo waited")
	t.Logf("3 × 0.9 GiB under 2 GiB:\n%s", out)
	if !strings.Contains(out, "killed: the session's memory cap (2 GiB) was reached") {
		t.Errorf("the OOM kill is not reported:\n%s", out)
	}
	if r := lastResult(t, bob.Client, s.ID); r.Error == nil || r.Error.Code != "MEMORY_CAP" || !r.Message.Content[0].IsError {
		t.Errorf("the OOM kill is not a coded tool error: %+v", r.Error)
	}

	// Two fit exactly (the quota counts files, not directories); the
	// second fills it and says so.
	for _, f := range []string{"f1", "f2"} {
		out := runAs(t, a, bob, s.ID, "head -c 536870912 /dev/zero > "+f+"; echo status=$?")
		if !hasLine(out, "status=0") || strings.Contains(out, "quota") != (f == "f2") {
			t.Fatalf("writing %s:\n%s", f, out)
		}
	}
	out = runAs(t, a, bob, s.ID, "head -c 536870912 /dev/zero > f3; echo status=$?")
	t.Logf("the third 512 MiB under 1 GiB:\n%s", out)
	if !strings.Contains(out, "of its 1 GiB quota; free space") || hasLine(out, "status=0") {
		t.Errorf("the third write is not stopped at the quota:\n%s", out)
	}
	if fi, err := os.Stat(filepath.Join(s.Workspace.Path, "f3")); err == nil && fi.Size() > 1 {
		t.Errorf("f3 holds %d bytes past the quota", fi.Size())
	}
	// The write tool is refused outright, with a code.
	r := turnResult(t, a, bob, s.ID, "write: note.txt\nhello")
	if r.Error == nil || r.Error.Code != "DISK_QUOTA" || !strings.Contains(toolText(r), "of its 1 GiB quota; free space") {
		t.Errorf("the write tool over the quota: %+v %s", r.Error, toolText(r))
	}
	if _, err := os.Stat(filepath.Join(s.Workspace.Path, "note.txt")); err == nil {
		t.Error("the write tool wrote over the quota")
	}
	out = runAs(t, a, bob, s.ID, "rm f1 f3; echo removed")
	if !hasLine(out, "removed") {
		t.Fatalf("removing files over the quota:\n%s", out)
	}
	out = runAs(t, a, bob, s.ID, "head -c 104857600 /dev/zero > f4; echo status=$?")
	if !hasLine(out, "status=0") || strings.Contains(out, "quota") {
		t.Errorf("writes do not work again after freeing space:\n%s", out)
	}

	// Deleting the session removes its cgroup.
	cgroups, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup/pids/harness-*", s.ID))
	if len(cgroups) != 1 {
		t.Fatalf("the session's pids cgroup: %v", cgroups)
	}
	waitIdle(t, bob.Client, s.ID)
	if err := bob.Client.DeleteSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cgroups[0]); err == nil {
		t.Errorf("%s outlives its session", cgroups[0])
	}
}

// turnResult sends message and returns the tool result of the turn it
// starts.
func turnResult(t *testing.T, a *apptest.App, u apptest.User, id, message string) session.ToolResult {
	t.Helper()
	before := turnEnds(t, u.Client, id)
	if _, err := u.Client.SendMessage(t.Context(), id, message, ""); err != nil {
		t.Fatalf("send: %v", err)
	}
	poll.Eventually(t, "the turn to end", func() bool { return turnEnds(t, u.Client, id) != before },
		poll.Within(60*time.Second), poll.Every(20*time.Millisecond))
	return lastResult(t, u.Client, id)
}

// lastResult is the session's last tool result.
func lastResult(t *testing.T, c *client.Client, id string) session.ToolResult {
	t.Helper()
	var r session.ToolResult
	for _, ev := range allEvents(t, c, id) {
		if ev.Type == "tool/result" {
			if err := json.Unmarshal(ev.Data, &r); err != nil {
				t.Fatal(err)
			}
		}
	}
	return r
}
