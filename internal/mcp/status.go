package mcp

import (
	"sort"
	"time"
)

// ServerStatus is what Settings shows of a configured server: never a
// header or env value.
type ServerStatus struct {
	Name      string
	Origin    Origin // the config file or Settings
	Transport string // stdio | http
	Target    string // the command line, or the URL without user info, query or fragment
	ReadOnly  bool
	Timeout   time.Duration
	// Sessions are the live sessions' connections, by session id.
	Sessions []SessionStatus
	// Tools are the newest list any live session took (none before the
	// first); Skipped the tools left out of it, and why.
	Tools   []ToolInfo
	Skipped []string
}

// SessionStatus is one live session's connection to a server.
type SessionStatus struct {
	Session string
	State   State
	Error   string // the last failure, redacted
}

// ToolInfo is one offered tool.
type ToolInfo struct {
	Name        string // as the model sees it
	Description string
}

// Status reports every configured server with the live sessions'
// connections.
func (m *Manager) Status() []ServerStatus {
	m.mu.Lock()
	sets := make([]*Set, 0, len(m.sets))
	for _, s := range m.sets {
		sets = append(sets, s)
	}
	m.mu.Unlock()
	sort.Slice(sets, func(i, j int) bool { return sets[i].sessionID < sets[j].sessionID })
	servers := m.Servers()
	out := make([]ServerStatus, len(servers))
	newest := make([]time.Time, len(servers))
	index := make(map[string]int, len(servers))
	for i, srv := range servers {
		out[i] = ServerStatus{Name: srv.Name, Origin: srv.Origin, Transport: srv.Transport(), Target: srv.Target(), ReadOnly: srv.ReadOnly, Timeout: srv.CallTimeout}
		index[srv.Name] = i
	}
	for _, s := range sets {
		for _, c := range s.connections() {
			i, ok := index[c.srv.Name]
			if !ok || !c.srv.sameAs(servers[i]) {
				continue // a connection the set drops at its next step
			}
			// A start holds the lock for up to its timeout: the page must
			// not wait for it.
			if !c.mu.TryLock() {
				out[i].Sessions = append(out[i].Sessions, SessionStatus{Session: s.sessionID, State: StateConnecting})
				continue
			}
			out[i].Sessions = append(out[i].Sessions, SessionStatus{Session: s.sessionID, State: c.state, Error: c.lastErr})
			if c.listed && c.listedAt.After(newest[i]) {
				newest[i] = c.listedAt
				out[i].Tools = out[i].Tools[:0]
				for _, d := range c.defs {
					out[i].Tools = append(out[i].Tools, ToolInfo{Name: d.Name, Description: d.Description})
				}
				out[i].Skipped = append([]string(nil), c.skipped...)
			}
			c.mu.Unlock()
		}
	}
	return out
}
