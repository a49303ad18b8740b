package tools

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

const (
	// maxFileBytes bounds what the file tools load into memory.
	maxFileBytes = 64 << 20
	// binarySniff is how much of a file is checked for NUL bytes.
	binarySniff = 8000
)

// fileSnapshot is a file's content as loaded by a file tool.
type fileSnapshot struct {
	content []byte
	info    fs.FileInfo
}

// loadFile reads a regular file of the workspace, with coded errors for the
// cases the model can act on.
func loadFile(p wsPath) (fileSnapshot, error) {
	info, err := os.Stat(p.Abs)
	if errors.Is(err, fs.ErrNotExist) {
		return fileSnapshot{}, Errorf(NameFs, CodeFsNotFound, "file %q does not exist", p.Rel)
	}
	if err != nil {
		return fileSnapshot{}, fmt.Errorf("stat %s: %w", p.Rel, err)
	}
	if info.IsDir() {
		return fileSnapshot{}, Errorf(NameFs, CodeFsIsDirectory, "%q is a directory, not a file; use glob or bash (ls) to list it", p.Rel)
	}
	if !info.Mode().IsRegular() {
		return fileSnapshot{}, fmt.Errorf("%q is not a regular file", p.Rel)
	}
	if info.Size() > maxFileBytes {
		return fileSnapshot{}, fmt.Errorf("%q is too large (%d bytes, limit %d); use bash (head, tail, sed -n, grep) to inspect parts of it", p.Rel, info.Size(), maxFileBytes)
	}
	content, err := os.ReadFile(p.Abs)
	if err != nil {
		return fileSnapshot{}, fmt.Errorf("read %s: %w", p.Rel, err)
	}
	return fileSnapshot{content: content, info: info}, nil
}

// isBinary reports whether content looks binary (a NUL byte near the start,
// as git decides).
func isBinary(content []byte) bool {
	return bytes.IndexByte(content[:min(len(content), binarySniff)], 0) >= 0
}

// observe records what the agent now knows of the file.
func observe(state *AgentState, p wsPath, content []byte) {
	o := FileObservation{Path: p.Abs, Size: int64(len(content)), Hash: sha256.Sum256(content)}
	if info, err := os.Stat(p.Abs); err == nil {
		o.ModTime = info.ModTime()
	}
	state.Observe(o)
}

// checkObserved enforces the read-before-change and stale-version guards on
// an existing file.
func checkObserved(state *AgentState, p wsPath, current []byte) error {
	o, ok := state.Observation(p.Abs)
	if !ok {
		return Errorf(NameFs, CodeFsNotObserved, "%q exists but has not been read in this session; read the file, then retry", p.Rel)
	}
	if o.Hash != sha256.Sum256(current) {
		return Errorf(NameFs, CodeFsStaleVersion, "%q has changed since it was last read; re-read the file, then retry", p.Rel)
	}
	return nil
}
