package tools

import (
	"sync"
	"time"
)

// FileObservation is what an agent last saw of a file: the basis of the
// read-before-edit and stale-version guards.
type FileObservation struct {
	Path    string    `json:"path"` // absolute, symlinks resolved
	ModTime time.Time `json:"modTime"`
	Size    int64     `json:"size"`
	Hash    [32]byte  `json:"hash"` // SHA-256 of the content
}

// AgentState is per-agent tool state, shared by every call of that agent and
// safe for concurrent use.
type AgentState struct {
	mu    sync.Mutex
	files map[string]FileObservation
}

// NewAgentState returns empty state.
func NewAgentState() *AgentState {
	return &AgentState{files: map[string]FileObservation{}}
}

// Observe records what the agent now knows of a file.
func (s *AgentState) Observe(o FileObservation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[o.Path] = o
}

// Observation returns the last observation of path (absolute, resolved).
func (s *AgentState) Observation(path string) (FileObservation, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.files[path]
	return o, ok
}

// Forget drops the observation of path.
func (s *AgentState) Forget(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.files, path)
}
