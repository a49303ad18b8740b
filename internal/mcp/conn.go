package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"harness/internal/tools"
)

// Dialer makes the transport of one connection to srv for a session with
// the given workspace. A Dialer given in Options replaces the real one
// (a process in the sandbox, or HTTP).
type Dialer func(ctx context.Context, srv Server, workspace string) (sdk.Transport, error)

// State is where a session's connection to a server stands.
type State string

const (
	StateIdle       State = "not started" // nothing asked for it yet
	StateConnecting State = "starting"
	StateReady      State = "connected"
	StateFailed     State = "failed" // the last start failed
	StateExited     State = "exited" // it stopped or dropped the connection; restarts on the next call
	StateClosed     State = "closed" // the session unloaded
)

// Error names and codes of MCP tool failures.
const (
	NameServerError       = "MCPServerError"
	CodeServerUnavailable = "MCP_SERVER_UNAVAILABLE"
	CodeServerExited      = "MCP_SERVER_EXITED"
	CodeCallFailed        = "MCP_CALL_FAILED"
)

// conn is one session's connection to one server.
type conn struct {
	set *Set
	srv Server

	// mu serialises starts and guards every field below.
	mu        sync.Mutex
	cs        *sdk.ClientSession // nil while not connected
	proc      *exec.Cmd          // a stdio server's process
	stderr    *tail
	state     State
	lastErr   string
	failedAt  time.Time
	listed    bool // a list was taken (it stays offered across restarts)
	listedAt  time.Time
	stale     bool // the server said its list changed
	defs      []tools.Definition
	sum       []byte            // the definitions' fingerprint
	skipped   []string          // tools left out, and why
	toolNames map[string]string // exposed name → the server's

	pmu   sync.Mutex
	calls map[string]*tools.Call // running calls by progress token
}

func newConn(s *Set, srv Server) *conn {
	return &conn{set: s, srv: srv, state: StateIdle, calls: map[string]*tools.Call{}}
}

// refresh connects and lists when no list was taken yet or the server said
// it changed. A start that failed recently is not retried here.
func (c *conn) refresh(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.listed && !c.stale {
		return
	}
	if c.cs == nil && !c.failedAt.IsZero() && time.Since(c.failedAt) < retryConnect {
		return
	}
	cs, err := c.sessionLocked(ctx)
	if err != nil {
		return
	}
	if err := c.listLocked(ctx, cs); err != nil {
		err = c.redact(err)
		c.set.m.log.Warn("MCP server: listing its tools failed", "server", c.srv.Name, "session", c.set.sessionID, "err", err)
		c.lastErr = "listing tools: " + err.Error()
	}
}

// definitions returns the definitions of the last list and their
// fingerprint.
func (c *conn) definitions() ([]tools.Definition, []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]tools.Definition(nil), c.defs...), c.sum
}

// sessionLocked returns the live client session, starting the server when
// there is none.
func (c *conn) sessionLocked(ctx context.Context) (*sdk.ClientSession, error) {
	if c.cs != nil {
		return c.cs, nil
	}
	if c.set.isClosed() {
		c.state = StateClosed
		return nil, errors.New("the session's MCP connections are closed")
	}
	c.state = StateConnecting
	cs, err := c.connectLocked(ctx)
	if err != nil {
		err = c.redact(err)
		c.state, c.lastErr, c.failedAt = StateFailed, err.Error(), time.Now()
		c.set.m.log.Warn("MCP server did not start", "server", c.srv.Name, "session", c.set.sessionID, "err", err)
		return nil, err
	}
	c.cs, c.state, c.lastErr, c.failedAt = cs, StateReady, "", time.Time{}
	go c.watch(cs)
	if !c.listed {
		// The first list is taken by the caller (refresh) or here, so a call
		// that starts the server also learns its tools.
		if err := c.listLocked(ctx, cs); err != nil {
			c.lastErr = "listing tools: " + c.redact(err).Error()
		}
	}
	return cs, nil
}

func (c *conn) connectLocked(ctx context.Context) (*sdk.ClientSession, error) {
	ctx, cancel := context.WithTimeout(ctx, c.srv.StartTimeout)
	defer cancel()
	t, proc, stderr, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	logger := c.set.m.log.With("mcp", c.srv.Name, "session", c.set.sessionID)
	if c.srv.URL != "" && c.srv.Target() != c.srv.URL {
		logger = slog.New(slog.DiscardHandler) // the SDK may log the URL, whose user info or query can hold a token
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "harness", Version: "1"}, &sdk.ClientOptions{
		Logger: logger,
		// Roots without list-changed notifications: the workspace is the
		// session's one root and never changes. Roots are deprecated by
		// protocol 2026-07-28 but still how servers (the reference
		// filesystem server) learn the directory they may use.
		//lint:ignore SA1019 roots stay until the servers we run take paths another way
		Capabilities:                &sdk.ClientCapabilities{RootsV2: &sdk.RootCapabilities{}},
		ToolListChangedHandler:      func(context.Context, *sdk.ToolListChangedRequest) { c.markStale() },
		ProgressNotificationHandler: c.progress,
	})
	//lint:ignore SA1019 see Capabilities above
	client.AddRoots(&sdk.Root{URI: (&url.URL{Scheme: "file", Path: c.set.workspace}).String(), Name: "workspace"})
	cs, err := client.Connect(ctx, t, nil)
	if err != nil {
		if proc != nil {
			killGroup(proc)
		}
		if stderr != nil && stderr.String() != "" {
			return nil, fmt.Errorf("%w; its stderr ends with: %s", err, stderr.String())
		}
		return nil, err
	}
	c.proc, c.stderr = proc, stderr
	return cs, nil
}

// dial makes the transport: the configured Dialer, a process in the
// session's sandbox, or streamable HTTP.
func (c *conn) dial(ctx context.Context) (sdk.Transport, *exec.Cmd, *tail, error) {
	if d := c.set.m.opts.Dial; d != nil {
		t, err := d(ctx, c.srv, c.set.workspace)
		return t, nil, nil, err
	}
	if c.srv.URL != "" {
		hc := &http.Client{Transport: headerTransport{base: http.DefaultTransport, headers: c.srv.Headers}}
		return &sdk.StreamableClientTransport{Endpoint: c.srv.URL, HTTPClient: hc}, nil, nil, nil
	}
	if c.set.confine == nil {
		return nil, nil, nil, errors.New("this server cannot start processes for tools")
	}
	cmd, err := c.set.confine(ctx, tools.Process{
		Path: c.srv.Command, Args: c.srv.Args, Env: c.env(), ReadOnly: c.srv.ReadOnlyPaths,
	})
	if err != nil {
		return nil, nil, nil, err
	}
	stderr := &tail{max: 2048}
	cmd.Stderr = stderr
	return &sdk.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, cmd, stderr, nil
}

// env is a stdio server's whole environment: a PATH, the allowed
// variables of the server's own, then the configured ones.
func (c *conn) env() []string {
	vars := map[string]string{"PATH": "/usr/local/bin:/usr/bin:/bin"}
	for _, k := range c.srv.EnvAllow {
		if v := c.set.m.opts.Getenv(k); v != "" {
			vars[k] = v
		}
	}
	for k, v := range c.srv.Env {
		vars[k] = v
	}
	out := make([]string, 0, len(vars))
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// watch notices a connection that ended (the process exited, the HTTP
// session dropped): the next call starts the server again.
func (c *conn) watch(cs *sdk.ClientSession) {
	err := cs.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cs != cs {
		return // closed on purpose, or replaced
	}
	c.cs = nil
	c.state = StateExited
	msg := "the connection ended"
	if err != nil && !errors.Is(err, sdk.ErrConnectionClosed) {
		msg += ": " + c.redact(err).Error()
	}
	if c.stderr != nil && c.stderr.String() != "" {
		msg += "; its stderr ends with: " + c.stderr.String()
	}
	c.lastErr = msg
	if c.proc != nil {
		killGroup(c.proc)
		c.proc = nil
	}
	c.set.m.log.Warn("MCP server exited; it restarts on the next call", "server", c.srv.Name, "session", c.set.sessionID, "reason", msg)
}

// close ends the connection for good.
func (c *conn) close() {
	c.mu.Lock()
	cs, proc := c.cs, c.proc
	c.cs, c.proc, c.state = nil, nil, StateClosed
	c.mu.Unlock()
	if cs != nil {
		_ = cs.Close()
	}
	if proc != nil {
		killGroup(proc)
	}
}

func (c *conn) markStale() {
	c.mu.Lock()
	c.stale = true
	c.mu.Unlock()
}

// redact removes the server's secrets from an error before it is logged,
// kept for Settings or told to the model: the URL's user info and query
// (the target stands for it) and header and env values.
func (c *conn) redact(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if c.srv.URL != "" {
		msg = strings.ReplaceAll(msg, c.srv.URL, c.srv.Target())
		if u, perr := url.Parse(c.srv.URL); perr == nil {
			if u.RawQuery != "" {
				msg = strings.ReplaceAll(msg, u.RawQuery, "[redacted]")
			}
			if u.User != nil {
				msg = strings.ReplaceAll(msg, u.User.String(), "[redacted]")
			}
		}
	}
	for _, vals := range []map[string]string{c.srv.Headers, c.srv.Env} {
		for _, v := range vals {
			if len(v) >= 4 {
				msg = strings.ReplaceAll(msg, v, "[redacted]")
			}
		}
	}
	return errors.New(msg)
}

// killGroup kills what a sandboxed server started (the sandbox makes every
// command its own process group leader).
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// headerTransport adds the configured headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range t.headers {
			r.Header.Set(k, v)
		}
	}
	return t.base.RoundTrip(r)
}

// tail keeps the last max bytes written (a server's stderr, for errors).
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}

// listLocked takes the server's tool list and builds the definitions.
func (c *conn) listLocked(ctx context.Context, cs *sdk.ClientSession) error {
	ctx, cancel := context.WithTimeout(ctx, c.srv.StartTimeout)
	defer cancel()
	c.stale = false
	var list []*sdk.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			c.stale = true // try again at the next step
			return err
		}
		list = append(list, t)
	}
	c.buildLocked(list)
	c.listed, c.listedAt = true, time.Now()
	return nil
}

// buildLocked turns a tool list into definitions, skipping (and saying
// why) tools whose names collide after sanitising or whose schemas the
// registry would refuse.
func (c *conn) buildLocked(list []*sdk.Tool) {
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	c.defs, c.skipped, c.toolNames = nil, nil, map[string]string{}
	var sum []byte
	for _, t := range list {
		name := exposedName(c.srv.Name, t.Name)
		if prev, dup := c.toolNames[name]; dup {
			c.skipped = append(c.skipped, fmt.Sprintf("%s: its name collides with %s as %s", t.Name, prev, name))
			continue
		}
		params, err := inputSchema(t.InputSchema)
		if err != nil {
			c.skipped = append(c.skipped, fmt.Sprintf("%s: %v", t.Name, err))
			continue
		}
		c.toolNames[name] = t.Name
		d := c.definition(name, t, params)
		c.defs = append(c.defs, d)
		b, _ := json.Marshal(d.Schema())
		sum = append(append(sum, b...), '\n')
	}
	for _, s := range c.skipped {
		c.set.m.log.Warn("MCP tool left out", "server", c.srv.Name, "tool", s)
	}
	c.sum = sum
}

// maxNameLen is what OpenAI-compatible providers accept.
const maxNameLen = 64

// exposedName is SERVER__TOOL with every character providers refuse
// replaced by "_", cut to 64 bytes.
func exposedName(server, tool string) string {
	var b strings.Builder
	b.WriteString(server + "__")
	for _, r := range tool {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := b.String()
	if len(s) > maxNameLen {
		s = s[:maxNameLen]
	}
	return s
}

// inputSchema is the tool's input schema as JSON: an object schema, as
// providers and the registry require ("type": "object" is added when a
// server left it out of an object-shaped schema).
func inputSchema(s any) (json.RawMessage, error) {
	if s == nil {
		return json.RawMessage(`{"type":"object","properties":{}}`), nil
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	var obj map[string]any
	if err := json.Unmarshal(b, &obj); err != nil {
		return nil, errors.New("input schema is not a JSON object")
	}
	if _, ok := obj["type"]; !ok {
		obj["type"] = "object"
		if b, err = json.Marshal(obj); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// definition is the tool definition of one of the server's tools.
func (c *conn) definition(name string, t *sdk.Tool, params json.RawMessage) tools.Definition {
	access, safe := tools.AccessExec, func(json.RawMessage) bool { return false }
	if c.srv.ReadOnly {
		access, safe = tools.AccessRead, func(json.RawMessage) bool { return true }
	}
	desc := t.Description
	if desc == "" {
		desc = t.Title
	}
	server, tool := c.srv.Name, t.Name
	return tools.Definition{
		Name:            name,
		Description:     desc,
		Parameters:      params,
		Access:          access,
		Timeout:         c.srv.CallTimeout,
		ConcurrencySafe: safe,
		Execute: func(ctx context.Context, call *tools.Call) (tools.Result, error) {
			return c.call(ctx, call, server, tool)
		},
	}
}
