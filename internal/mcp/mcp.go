// Package mcp connects sessions to the MCP servers an admin configured
// (docs/mcp.md), through the official Go SDK. Each session has its own
// connection to each server, made lazily when the session's first step
// assembles its tools: a stdio server starts inside the session's sandbox
// with the workspace as its working directory, so what it touches is what
// the session's own tools could; a streamable HTTP server is reached from
// the server process with the configured headers.
//
// A server's tools reach the model as SERVER__TOOL with the server's input
// schema, validated by the tool registry like a built-in tool's, and run
// through the same pipeline (permission modes, approvals): "exec" access,
// or "read" when the admin marked the server read-only. A server that
// exits or drops its connection fails the running call with a tool error
// and is started again on the next call; its last tool list stays offered
// meanwhile, so the request header (and the provider's prompt cache) does
// not change. A list_changed notification makes the next step list the
// server's tools again; only a list that really differs changes the
// header.
//
// The package knows sessions only by id and workspace, and starts
// processes only through the Confine function its caller gives.
package mcp

import (
	"context"
	"hash/fnv"
	"log/slog"
	"os/exec"
	"sync"
	"time"

	"harness/internal/tools"
)

// Confine builds the command that runs p in a session's sandbox; it starts
// nothing.
type Confine func(ctx context.Context, p tools.Process) (*exec.Cmd, error)

// retryConnect is how long after a failed start a step's assembly waits
// before trying the server again (a call always tries at once): a broken
// server must not cost every step its start timeout.
const retryConnect = 30 * time.Second

// Options tune a Manager.
type Options struct {
	Log *slog.Logger
	// Getenv reads the server's environment for stdio servers' envAllow.
	Getenv func(string) string
	// Dial, when set, replaces how a connection's transport is made (tests
	// connect in-process SDK servers through it).
	Dial Dialer
	// Store keeps the servers added in Settings (catalog.go); nil: only the
	// config file's.
	Store Store
	// OnChange is called after an admin's change was stored and applied
	// (replicas tell the others, which Load again); nil: nothing.
	OnChange func()
	// Images stores the images of tool results with their session, for
	// the transcript; nil: results only say an image was left out.
	Images ImageStore
}

// ImageStore keeps an image a tool result carried as an attachment of the
// session (service.Service), checked like an upload.
type ImageStore interface {
	StoreResultImage(ctx context.Context, sessionID string, data []byte) (tools.MetaImage, error)
}

// Manager holds the configured servers and every live session's
// connections. It is safe for concurrent use.
type Manager struct {
	log  *slog.Logger
	file []Server // from the config file, fixed at start
	opts Options

	mu sync.Mutex
	// servers are the file's and then Settings' servers (catalog.go); a
	// change replaces the slice, and each session's set follows it at its
	// next step's assembly.
	servers []Server
	sets    map[string]*Set // by session id
}

// New builds a manager for cfg's servers; it starts nothing. Servers
// added in Settings come with Load when Options.Store is set.
func New(cfg Config, o Options) *Manager {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Getenv == nil {
		o.Getenv = func(string) string { return "" }
	}
	for i := range cfg.Servers {
		cfg.Servers[i].Origin = OriginFile
	}
	return &Manager{log: o.Log, file: cfg.Servers, servers: cfg.Servers, opts: o, sets: map[string]*Set{}}
}

// Servers returns the configured servers: the file's, then Settings'.
func (m *Manager) Servers() []Server {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Server(nil), m.servers...)
}

// Open returns session sessionID's connections, which start on first use.
// The caller closes the set when the session's agent unloads; opening a
// session again replaces (and closes) the previous set.
func (m *Manager) Open(sessionID, workspace string, confine Confine) *Set {
	s := &Set{m: m, sessionID: sessionID, workspace: workspace, confine: confine}
	m.mu.Lock()
	for _, srv := range m.servers {
		s.conns = append(s.conns, newConn(s, srv))
	}
	prev := m.sets[sessionID]
	m.sets[sessionID] = s
	m.mu.Unlock()
	if prev != nil {
		go prev.Close() // Open must not block (the driver holds its lock)
	}
	return s
}

// Close closes every session's connections (server shutdown).
func (m *Manager) Close() {
	m.mu.Lock()
	sets := make([]*Set, 0, len(m.sets))
	for _, s := range m.sets {
		sets = append(sets, s)
	}
	m.mu.Unlock()
	for _, s := range sets {
		s.Close()
	}
}

// Set is one session's connections to every configured server. It is safe
// for concurrent use.
type Set struct {
	m         *Manager
	sessionID string
	workspace string
	confine   Confine
	conns     []*conn

	// mu guards closed and conns' membership (follow replaces conns).
	mu     sync.Mutex
	closed bool
}

// Tools returns the definitions of every server's tools, connecting and
// listing where that has not happened yet or a server said its list
// changed, and a version that changes exactly when the definitions do. A
// server that cannot be reached contributes its last list (none before
// its first); the error is logged and shown in Settings.
func (s *Set) Tools(ctx context.Context) ([]tools.Definition, uint64) {
	conns := s.follow()
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() { c.refresh(ctx) })
	}
	wg.Wait()
	var defs []tools.Definition
	h := fnv.New64a()
	for _, c := range conns {
		d, sum := c.definitions()
		defs = append(defs, d...)
		h.Write(sum)
	}
	return defs, h.Sum64()
}

// Close stops every connection (a stdio server's process group is
// killed). Later calls fail with a tool error.
func (s *Set) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	conns := s.conns
	s.mu.Unlock()
	s.m.mu.Lock()
	if s.m.sets[s.sessionID] == s {
		delete(s.m.sets, s.sessionID)
	}
	s.m.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(c.close)
	}
	wg.Wait()
}

// follow brings the set's connections in line with the manager's servers:
// a connection to a server that was removed or changed is closed (its
// calls fail with a tool error), one to a new or changed server is made
// (it starts on first use); the others, and their tool lists, stay. It
// returns the connections in the servers' order.
func (s *Set) follow() []*conn {
	servers := s.m.Servers()
	s.mu.Lock()
	if s.closed {
		conns := s.conns
		s.mu.Unlock()
		return conns
	}
	have := make(map[string]*conn, len(s.conns))
	for _, c := range s.conns {
		have[c.srv.Name] = c
	}
	next := make([]*conn, 0, len(servers))
	changed := len(servers) != len(s.conns)
	for i, srv := range servers {
		c := have[srv.Name]
		if c != nil && c.srv.sameAs(srv) {
			delete(have, srv.Name)
		} else {
			c = newConn(s, srv)
		}
		changed = changed || i >= len(s.conns) || s.conns[i] != c
		next = append(next, c)
	}
	if changed {
		s.conns = next
	}
	s.mu.Unlock()
	for _, old := range have {
		go old.close() // the driver waits for Tools: never for a server's exit
	}
	return next
}

// connections returns the set's current connections.
func (s *Set) connections() []*conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*conn(nil), s.conns...)
}

func (s *Set) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}
