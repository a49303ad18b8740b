package models

import "context"

// Settings keys of the sandbox and workspaces.
const (
	settingWorkspaceRoots = "workspace_roots"
	settingGitHosts       = "git_hosts"
	settingRouteNetwork   = "route_network"
	settingFetchHosts     = "fetch_hosts"
)

// RootSetting is a workspace root an admin added in Settings.
type RootSetting struct {
	Path   string   `json:"path"`
	Users  []string `json:"users,omitempty"`
	Shared bool     `json:"shared,omitempty"`
}

// WorkspaceRoots reads the roots added in Settings.
func (s *SettingsStore) WorkspaceRoots(ctx context.Context) ([]RootSetting, error) {
	var out []RootSetting
	err := s.get(ctx, settingWorkspaceRoots, &out)
	return out, err
}

// SaveWorkspaceRoots stores the roots added in Settings.
func (s *SettingsStore) SaveWorkspaceRoots(ctx context.Context, roots []RootSetting) error {
	if roots == nil {
		roots = []RootSetting{}
	}
	return s.put(ctx, settingWorkspaceRoots, roots)
}

// GitHosts reads the clone hosts allowed in Settings.
func (s *SettingsStore) GitHosts(ctx context.Context) ([]string, error) {
	var out []string
	err := s.get(ctx, settingGitHosts, &out)
	return out, err
}

// SaveGitHosts stores the clone hosts allowed in Settings.
func (s *SettingsStore) SaveGitHosts(ctx context.Context, hosts []string) error {
	if hosts == nil {
		hosts = []string{}
	}
	return s.put(ctx, settingGitHosts, hosts)
}

// RouteNetwork reads which model routes give their sessions' tools the
// network.
func (s *SettingsStore) RouteNetwork(ctx context.Context) (map[string]bool, error) {
	out := map[string]bool{}
	err := s.get(ctx, settingRouteNetwork, &out)
	return out, err
}

// SaveRouteNetwork stores which routes give their sessions the network.
func (s *SettingsStore) SaveRouteNetwork(ctx context.Context, routes map[string]bool) error {
	if routes == nil {
		routes = map[string]bool{}
	}
	return s.put(ctx, settingRouteNetwork, routes)
}

// FetchHosts reads web_fetch's allow-list added in Settings.
func (s *SettingsStore) FetchHosts(ctx context.Context) ([]string, error) {
	var out []string
	err := s.get(ctx, settingFetchHosts, &out)
	return out, err
}

// SaveFetchHosts stores web_fetch's allow-list added in Settings.
func (s *SettingsStore) SaveFetchHosts(ctx context.Context, hosts []string) error {
	if hosts == nil {
		hosts = []string{}
	}
	return s.put(ctx, settingFetchHosts, hosts)
}
