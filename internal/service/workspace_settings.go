package service

import (
	"context"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"

	"harness/internal/auth"
	"harness/internal/egress"
	"harness/internal/models"
	"harness/internal/sandbox"
	"harness/internal/workspace"
)

// WorkspaceSettings is where admins' workspace and sandbox choices are
// stored (models.SettingsStore).
type WorkspaceSettings interface {
	WorkspaceRoots(ctx context.Context) ([]models.RootSetting, error)
	SaveWorkspaceRoots(ctx context.Context, roots []models.RootSetting) error
	GitHosts(ctx context.Context) ([]string, error)
	SaveGitHosts(ctx context.Context, hosts []string) error
	RouteNetwork(ctx context.Context) (map[string]bool, error)
	SaveRouteNetwork(ctx context.Context, routes map[string]bool) error
	FetchHosts(ctx context.Context) ([]string, error)
	SaveFetchHosts(ctx context.Context, hosts []string) error
}

// SandboxSettings is what the Settings page shows of the sandbox and the
// workspaces.
type SandboxSettings struct {
	Sandbox sandbox.Status `json:"sandbox"`
	// Roots are every workspace root (Source says where it is set); only
	// admins see them all, users see those they may use.
	Roots []workspace.Root `json:"roots"`
	// GitHosts are the allowed clone hosts; ConfigGitHosts those set in the
	// configuration (read-only here).
	GitHosts       []string `json:"gitHosts"`
	ConfigGitHosts []string `json:"configGitHosts"`
	// RouteNetwork says which model routes give their sessions' tools the
	// network.
	RouteNetwork map[string]bool `json:"routeNetwork"`
	// FetchHosts is web_fetch's allow-list set in Settings; ConfigFetchHosts
	// the entries from the configuration (read-only here).
	FetchHosts       []string `json:"fetchHosts"`
	ConfigFetchHosts []string `json:"configFetchHosts"`
	// ForkCopyMax is the fork copy cap in bytes.
	ForkCopyMax int64 `json:"forkCopyMax"`
	// Disk is the workspace quota and what enforces it.
	Disk workspace.DiskStatus `json:"disk"`
}

// requireAdmin refuses everyone but admins.
func requireAdmin(a *auth.Actor) error {
	if !a.IsUser() {
		return Errorf(CodeUnauthorized, "sign in first")
	}
	if !a.IsAdmin() {
		return Errorf(CodeForbidden, "only an admin can change this")
	}
	return nil
}

// SandboxSettings reads the sandbox status and, for admins, the workspace
// settings.
func (s *Service) SandboxSettings(ctx context.Context, a *auth.Actor) (SandboxSettings, error) {
	if err := s.requireUser(a); err != nil {
		return SandboxSettings{}, err
	}
	out := SandboxSettings{Sandbox: s.SandboxStatus(), RouteNetwork: map[string]bool{}, ForkCopyMax: s.ws.ForkCopyMax(), Disk: s.ws.Disk()}
	if !a.IsAdmin() {
		roots, err := s.WorkspaceRoots(ctx, a)
		out.Roots = roots
		return out, err
	}
	roots, err := s.ws.AllRoots(ctx)
	if err != nil {
		return out, s.fail(ctx, "workspace roots", err)
	}
	out.Roots = roots
	all, err := s.ws.AllGitHosts(ctx)
	if err != nil {
		return out, s.fail(ctx, "git hosts", err)
	}
	stored, err := s.settings.GitHosts(ctx)
	if err != nil {
		return out, s.fail(ctx, "git hosts", err)
	}
	out.GitHosts = stored
	for _, h := range all {
		if !slices.Contains(stored, h) {
			out.ConfigGitHosts = append(out.ConfigGitHosts, h)
		}
	}
	if out.RouteNetwork, err = s.settings.RouteNetwork(ctx); err != nil {
		return out, s.fail(ctx, "route network", err)
	}
	allFetch, err := s.ws.AllFetchHosts(ctx)
	if err != nil {
		return out, s.fail(ctx, "fetch hosts", err)
	}
	if out.FetchHosts, err = s.settings.FetchHosts(ctx); err != nil {
		return out, s.fail(ctx, "fetch hosts", err)
	}
	for _, h := range allFetch {
		if !slices.Contains(out.FetchHosts, h) {
			out.ConfigFetchHosts = append(out.ConfigFetchHosts, h)
		}
	}
	return out, nil
}

// userNamePattern is a login name (as auth accepts them).
var userNamePattern = regexp.MustCompile(`^[a-z0-9._-]{1,64}$`)

// AddWorkspaceRoot adds (or replaces) a root in Settings; its Source is
// ignored (it becomes "settings").
func (s *Service) AddWorkspaceRoot(ctx context.Context, a *auth.Actor, root workspace.Root) error {
	if err := requireAdmin(a); err != nil {
		return err
	}
	r := models.RootSetting{Path: root.Path, Users: slices.Clone(root.Users), Shared: root.Shared}
	path, err := s.ws.CheckRoot(strings.TrimSpace(r.Path))
	if err != nil {
		return s.workspaceError(ctx, "add workspace root", err)
	}
	r.Path = path
	for i, u := range r.Users {
		u = strings.ToLower(strings.TrimSpace(u))
		if !userNamePattern.MatchString(u) {
			return Errorf(CodeBadRequest, "%q is not a user name", r.Users[i])
		}
		r.Users[i] = u
	}
	roots, err := s.settings.WorkspaceRoots(ctx)
	if err != nil {
		return s.fail(ctx, "add workspace root", err)
	}
	roots = slices.DeleteFunc(roots, func(x models.RootSetting) bool { return x.Path == r.Path })
	if err := s.settings.SaveWorkspaceRoots(ctx, append(roots, r)); err != nil {
		return s.fail(ctx, "add workspace root", err)
	}
	s.log.InfoContext(ctx, "workspace root added", "path", r.Path, "users", r.Users, "shared", r.Shared, "by", a.UserID)
	return nil
}

// RemoveWorkspaceRoot removes a root added in Settings. Sessions already
// working in a directory under it keep it.
func (s *Service) RemoveWorkspaceRoot(ctx context.Context, a *auth.Actor, path string) error {
	if err := requireAdmin(a); err != nil {
		return err
	}
	roots, err := s.settings.WorkspaceRoots(ctx)
	if err != nil {
		return s.fail(ctx, "remove workspace root", err)
	}
	kept := slices.DeleteFunc(slices.Clone(roots), func(x models.RootSetting) bool { return x.Path == path })
	if len(kept) == len(roots) {
		return Errorf(CodeNotFound, "no workspace root %s in Settings (roots from HARNESS_WORKSPACE_ROOTS are changed there)", path)
	}
	if err := s.settings.SaveWorkspaceRoots(ctx, kept); err != nil {
		return s.fail(ctx, "remove workspace root", err)
	}
	s.log.InfoContext(ctx, "workspace root removed", "path", path, "by", a.UserID)
	return nil
}

// hostPattern is a host name or address with an optional port.
var hostPattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]{1,5})?$|^\[[0-9a-f:]+\](:[0-9]{1,5})?$`)

// SetGitHosts replaces the clone hosts allowed in Settings: "host" or
// "host:port" allows https, "http://host:port" plain http.
func (s *Service) SetGitHosts(ctx context.Context, a *auth.Actor, hosts []string) error {
	if err := requireAdmin(a); err != nil {
		return err
	}
	var out []string
	for _, h := range hosts {
		h = strings.ToLower(strings.TrimSpace(h))
		if h == "" {
			continue
		}
		bare := h
		if rest, ok := strings.CutPrefix(h, "http://"); ok {
			bare = rest
		} else if rest, ok := strings.CutPrefix(h, "https://"); ok {
			bare, h = rest, rest
		}
		if _, err := url.Parse("https://" + bare); err != nil || !hostPattern.MatchString(bare) {
			return Errorf(CodeBadRequest, "%q is not a host (write host, host:port or http://host:port)", h)
		}
		if !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	if err := s.settings.SaveGitHosts(ctx, out); err != nil {
		return s.fail(ctx, "git hosts", err)
	}
	s.log.InfoContext(ctx, "git hosts changed", "hosts", out, "by", a.UserID)
	return nil
}

// SetFetchHosts replaces web_fetch's allow-list in Settings: hosts it may
// reach also at loopback, private and link-local addresses (host,
// host:port, *.domain or an IP address). Public hosts need no entry.
func (s *Service) SetFetchHosts(ctx context.Context, a *auth.Actor, hosts []string) error {
	if err := requireAdmin(a); err != nil {
		return err
	}
	var out []string
	for _, h := range hosts {
		if strings.TrimSpace(h) == "" {
			continue
		}
		n, err := egress.ParseHost(h)
		if err != nil {
			return Errorf(CodeBadRequest, "%v", err)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	if err := s.settings.SaveFetchHosts(ctx, out); err != nil {
		return s.fail(ctx, "fetch hosts", err)
	}
	s.log.InfoContext(ctx, "web fetch hosts changed", "hosts", out, "by", a.UserID)
	return nil
}

// SetRouteNetwork lets the tools of sessions using a model route use the
// network (or stops them).
func (s *Service) SetRouteNetwork(ctx context.Context, a *auth.Actor, route string, on bool) error {
	if err := requireAdmin(a); err != nil {
		return err
	}
	if _, ok := s.providers.Get(route); !ok {
		return Errorf(CodeNotFound, "no model route %q", route)
	}
	routes, err := s.settings.RouteNetwork(ctx)
	if err != nil {
		return s.fail(ctx, "route network", err)
	}
	if on {
		routes[route] = true
	} else {
		delete(routes, route)
	}
	if err := s.settings.SaveRouteNetwork(ctx, routes); err != nil {
		return s.fail(ctx, "route network", err)
	}
	s.log.InfoContext(ctx, "route network changed", "route", route, "network", on, "by", a.UserID)
	return nil
}

// memSettings keeps workspace settings in memory, for a service built
// without a settings store (tests).
type memSettings struct {
	mu     sync.Mutex
	roots  []models.RootSetting
	hosts  []string
	routes map[string]bool
	fetch  []string
}

func (m *memSettings) WorkspaceRoots(context.Context) ([]models.RootSetting, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.roots), nil
}

func (m *memSettings) SaveWorkspaceRoots(_ context.Context, r []models.RootSetting) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.roots = slices.Clone(r)
	return nil
}

func (m *memSettings) GitHosts(context.Context) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.hosts), nil
}

func (m *memSettings) SaveGitHosts(_ context.Context, h []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.hosts = slices.Clone(h)
	return nil
}

func (m *memSettings) RouteNetwork(context.Context) (map[string]bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.routes), nil
}

func (m *memSettings) SaveRouteNetwork(_ context.Context, r map[string]bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.routes = maps.Clone(r)
	return nil
}

func (m *memSettings) FetchHosts(context.Context) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.fetch), nil
}

func (m *memSettings) SaveFetchHosts(_ context.Context, h []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fetch = slices.Clone(h)
	return nil
}
