package mcp

import "harness/internal/llm"

// ServerPID is the process id of a session's stdio server (0: none
// running), so tests can kill it.
func (m *Manager) ServerPID(sessionID, server string) int {
	m.mu.Lock()
	s := m.sets[sessionID]
	m.mu.Unlock()
	if s == nil {
		return 0
	}
	for _, c := range s.connections() {
		if c.srv.Name != server {
			continue
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.proc == nil || c.proc.Process == nil {
			return 0
		}
		return c.proc.Process.Pid
	}
	return 0
}

// TextOf joins a result's text blocks.
func TextOf(blocks []llm.ContentBlock) string {
	return llm.Message{Content: blocks}.Text()
}
