package mcp_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"harness/internal/mcp"
	"harness/internal/session"
	"harness/internal/testkit"
	"harness/internal/testkit/poll"
	"harness/internal/tools"
)

// referenceServers is the directory where .ci/run installs the reference
// MCP servers from npm (HARNESS_TEST_MCP_SERVERS); without it the tests
// skip loudly, unless HARNESS_TEST_REQUIRE_MCP=1 (CI) makes that a
// failure.
func referenceServers(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("HARNESS_TEST_MCP_SERVERS")
	probe := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	_, err := os.Stat(probe)
	if dir != "" && err == nil {
		if _, err := os.Stat("/usr/bin/node"); err == nil {
			return dir
		}
	}
	msg := "!!! SKIPPING THE REFERENCE MCP SERVER TESTS: set HARNESS_TEST_MCP_SERVERS to a directory where " +
		"`npm install @modelcontextprotocol/server-everything @modelcontextprotocol/server-filesystem` ran (see .ci/run) and install node !!!"
	if os.Getenv("HARNESS_TEST_REQUIRE_MCP") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

func referenceConfig(dir string) mcp.Config {
	pkg := func(name string) string {
		return filepath.Join(dir, "node_modules", "@modelcontextprotocol", name, "dist", "index.js")
	}
	return mcp.Config{Servers: []mcp.Server{
		{Name: "everything", Command: "node", Args: []string{pkg("server-everything"), "stdio"},
			ReadOnlyPaths: []string{dir}, CallTimeout: time.Minute, StartTimeout: 30 * time.Second},
		// "." is the working directory: the session's workspace.
		{Name: "filesystem", Command: "node", Args: []string{pkg("server-filesystem"), "."},
			ReadOnlyPaths: []string{dir}, CallTimeout: time.Minute, StartTimeout: 30 * time.Second},
	}}
}

// The reference servers from npm, started in the session's sandbox by the
// demo model's call: rule: everything's echo and filesystem's read (in the
// workspace, its working directory) after an approval each; a long call
// streams its progress as tool output, fails with a tool error when its
// server is killed, and the next call starts the server again.
func TestReferenceServers(t *testing.T) {
	t.Parallel()
	dir := referenceServers(t)
	e := newEnv(t, referenceConfig(dir), nil)
	s := e.session(session.ModeAsk)
	if err := os.WriteFile(filepath.Join(s.Workspace.Path, "notes.txt"), []byte("written by the test\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	e.send(s.ID, `call: everything__echo {"message": "hello from harness"}`)
	e.approve(s.ID, "everything__echo")
	e.st.WaitIdle(t, s.ID)
	if r := e.result(s.ID); r.Message.Content[0].IsError || !strings.Contains(resultText(r), "hello from harness") {
		t.Fatalf("echo: %+v", r)
	}
	// The server's draft-07 input schema is enforced before anyone is asked.
	e.send(s.ID, `call: everything__echo {"message": 5}`)
	e.st.WaitIdle(t, s.ID)
	if r := e.result(s.ID); r.Error == nil || r.Error.Code != tools.CodeInvalidArgs || !strings.Contains(resultText(r), "at /message: type:") {
		t.Fatalf("echo with a number: %+v", r)
	}

	e.send(s.ID, `call: filesystem__read_text_file {"path": "notes.txt"}`)
	e.approve(s.ID, "filesystem__read_text_file")
	e.st.WaitIdle(t, s.ID)
	if r := e.result(s.ID); r.Message.Content[0].IsError || !strings.Contains(resultText(r), "written by the test") {
		t.Fatalf("read_text_file: %+v", r)
	}

	// An image answer: stored with the session, listed for the card.
	e.send(s.ID, `call: everything__get-tiny-image {}`)
	e.approve(s.ID, "everything__get-tiny-image")
	e.st.WaitIdle(t, s.ID)
	if r := e.result(s.ID); !strings.Contains(resultText(r), "20 x 20") || !strings.Contains(string(r.Meta), `"mediaType":"image/png"`) {
		t.Fatalf("get-tiny-image: %q, meta %s", resultText(r), r.Meta)
	}

	// A long operation reports progress; killing the server fails it.
	e.send(s.ID, `call: everything__trigger-long-running-operation {"duration": 60, "steps": 60}`)
	e.approve(s.ID, "everything__trigger-long-running-operation")
	poll.Eventually(t, "progress as tool output", func() bool {
		for _, o := range testkit.Find[session.ToolOutput](t, e.turn(s.ID), session.TypeToolOutput) {
			if strings.Contains(o.Text, "progress") {
				return true
			}
		}
		return false
	}, poll.Within(30*time.Second))
	pid := e.m.ServerPID(s.ID, "everything")
	if pid == 0 {
		t.Fatal("no everything process")
	}
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	e.st.WaitIdle(t, s.ID)
	r := e.result(s.ID)
	if r.Error == nil || r.Error.Code != mcp.CodeServerExited {
		t.Fatalf("killed server: %+v", r)
	}

	e.send(s.ID, `call: everything__echo {"message": "after the restart"}`)
	e.approve(s.ID, "everything__echo")
	e.st.WaitIdle(t, s.ID)
	if r := e.result(s.ID); r.Message.Content[0].IsError || !strings.Contains(resultText(r), "after the restart") {
		t.Fatalf("echo after the restart: %+v", r)
	}
	if next := e.m.ServerPID(s.ID, "everything"); next == 0 || next == pid {
		t.Fatalf("server pid %d after the restart (was %d)", next, pid)
	}
}
