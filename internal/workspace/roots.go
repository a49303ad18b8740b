package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Root is a directory whose subdirectories users may open as workspaces.
type Root struct {
	Path string `json:"path"`
	// Users may use it (names); empty means every user. Admins always may.
	Users []string `json:"users,omitempty"`
	// Shared lets several sessions use one directory at once.
	Shared bool `json:"shared,omitempty"`
	// Source is "config" (HARNESS_WORKSPACE_ROOTS) or "settings".
	Source string `json:"source,omitempty"`
}

// User is who asks for a workspace.
type User struct {
	ID    string
	Name  string
	Admin bool
}

// MayUse reports whether u may open directories under r.
func (r Root) MayUse(u User) bool {
	return u.Admin || len(r.Users) == 0 || slices.ContainsFunc(r.Users, func(n string) bool { return strings.EqualFold(n, u.Name) })
}

// Errors the service maps to client codes. Messages are safe to show.
var (
	ErrNotAllowed = errors.New("not allowed")
	ErrInvalid    = errors.New("invalid workspace")
	ErrInUse      = errors.New("workspace in use")
)

// AllRoots lists every configured root as given (configuration, then
// Settings), for the admin's view.
func (m *Manager) AllRoots(ctx context.Context) ([]Root, error) { return m.d.Roots(ctx) }

// AllGitHosts lists every allowed clone host (configuration, then Settings).
func (m *Manager) AllGitHosts(ctx context.Context) ([]string, error) { return m.d.GitHosts(ctx) }

// AllFetchHosts lists web_fetch's allow-list (configuration, then Settings).
func (m *Manager) AllFetchHosts(ctx context.Context) ([]string, error) { return m.d.FetchHosts(ctx) }

// CheckRoot refuses a root an admin is about to add: it must be an absolute
// path to an existing directory that neither contains nor lies inside the
// data directory. It returns the cleaned path.
func (m *Manager) CheckRoot(path string) (string, error) {
	if path == "" || !filepath.IsAbs(path) {
		return "", fmt.Errorf("%w: a workspace root must be an absolute path (got %q)", ErrInvalid, path)
	}
	clean := filepath.Clean(path)
	real, err := filepath.EvalSymlinks(clean)
	if err != nil {
		return "", fmt.Errorf("%w: %s does not exist", ErrInvalid, clean)
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%w: %s is not a directory", ErrInvalid, clean)
	}
	if m.overlapsData(real) {
		return "", fmt.Errorf("%w: %s overlaps the server's data directory, which tools must never reach", ErrNotAllowed, clean)
	}
	return clean, nil
}

// UsableRoots lists the roots u may use, with their paths resolved.
func (m *Manager) UsableRoots(ctx context.Context, u User) ([]Root, error) {
	all, err := m.d.Roots(ctx)
	if err != nil {
		return nil, fmt.Errorf("workspace roots: %w", err)
	}
	var out []Root
	for _, r := range all {
		if !r.MayUse(u) {
			continue
		}
		real, err := filepath.EvalSymlinks(r.Path)
		if err != nil || m.overlapsData(real) {
			continue
		}
		r.Path = real
		out = append(out, r)
	}
	return out, nil
}

// overlapsData reports whether dir is, contains or lies inside the data
// directory, or contains a file of Deps.PrivateFiles: such a directory
// never becomes a workspace or a root.
func (m *Manager) overlapsData(dir string) bool {
	data, err := filepath.EvalSymlinks(m.d.DataDir)
	if err != nil {
		data = m.d.DataDir
	}
	if within(dir, data) || within(data, dir) {
		return true
	}
	for _, f := range m.d.PrivateFiles {
		if real, err := filepath.EvalSymlinks(f); err == nil {
			f = real
		}
		if within(dir, f) {
			return true
		}
	}
	return false
}

// ResolveDir checks that u may open the existing directory path as a
// session's workspace: an absolute path to a directory under a root u may
// use, not overlapping the data directory, and (unless the root is shared)
// not used by another session. It returns the resolved path.
func (m *Manager) ResolveDir(ctx context.Context, u User, path, session string) (string, error) {
	real, root, err := m.underRoot(ctx, u, path)
	if err != nil {
		return "", err
	}
	if !root.Shared {
		used, err := m.d.InUse(ctx, real, session)
		if err != nil {
			return "", fmt.Errorf("workspace in use: %w", err)
		}
		if used {
			return "", fmt.Errorf("%w: another session already works in %s, and its root %s is not shared", ErrInUse, real, root.Path)
		}
	}
	return real, nil
}

// underRoot resolves path and finds the usable root it lies under.
func (m *Manager) underRoot(ctx context.Context, u User, path string) (string, Root, error) {
	if path == "" || !filepath.IsAbs(path) {
		return "", Root{}, fmt.Errorf("%w: the directory must be an absolute path (got %q)", ErrInvalid, path)
	}
	roots, err := m.UsableRoots(ctx, u)
	if err != nil {
		return "", Root{}, err
	}
	if len(roots) == 0 {
		return "", Root{}, fmt.Errorf("%w: no workspace root is open to you; an admin sets them (HARNESS_WORKSPACE_ROOTS or Settings)", ErrNotAllowed)
	}
	real, err := filepath.EvalSymlinks(filepath.Clean(path))
	if err != nil {
		return "", Root{}, fmt.Errorf("%w: %s does not exist or cannot be read", ErrInvalid, path)
	}
	fi, err := os.Stat(real)
	if err != nil || !fi.IsDir() {
		return "", Root{}, fmt.Errorf("%w: %s is not a directory", ErrInvalid, path)
	}
	if m.overlapsData(real) {
		return "", Root{}, fmt.Errorf("%w: %s overlaps the server's data directory", ErrNotAllowed, path)
	}
	for _, r := range roots {
		if within(r.Path, real) {
			return real, r, nil
		}
	}
	return "", Root{}, fmt.Errorf("%w: %s is not under a workspace root open to you", ErrNotAllowed, path)
}

// DirEntry is a subdirectory offered by Browse.
type DirEntry struct {
	Name string `json:"name"`
	Path string `json:"path"`
	Git  bool   `json:"git,omitempty"` // holds a git repository
}

// maxBrowse bounds one listing.
const maxBrowse = 500

// Browse lists the subdirectories of path (a root u may use, or a directory
// under one), for the workspace picker. Hidden directories are left out.
func (m *Manager) Browse(ctx context.Context, u User, path string) ([]DirEntry, error) {
	real, _, err := m.underRoot(ctx, u, path)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(real)
	if err != nil {
		return nil, fmt.Errorf("%w: %s cannot be listed", ErrInvalid, path)
	}
	out := []DirEntry{}
	for _, e := range ents {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p := filepath.Join(real, e.Name())
		if m.overlapsData(p) {
			continue
		}
		_, gerr := os.Stat(filepath.Join(p, ".git"))
		out = append(out, DirEntry{Name: e.Name(), Path: p, Git: gerr == nil})
		if len(out) == maxBrowse {
			break
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
