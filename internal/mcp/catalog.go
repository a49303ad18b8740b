package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"harness/internal/models"
)

// Servers added in Settings. An admin adds, edits and removes them on the
// settings page; they are stored (their env and header values sealed) and
// applied at once: every live session's set follows the new list at its
// next step. Servers of the config file cannot be changed there, and their
// names are taken.

// Store keeps the servers added in Settings (models.SettingsStore); secret
// values come back opened.
type Store interface {
	MCPServers(ctx context.Context) ([]models.StoredMCPServer, error)
	SaveMCPServer(ctx context.Context, srv models.StoredMCPServer) error
	DeleteMCPServer(ctx context.Context, name string) error
}

// InputError is a refused Settings form; its message is safe to show (it
// never quotes a secret value).
type InputError struct{ msg string }

func (e *InputError) Error() string { return e.msg }

func inputf(format string, a ...any) error { return &InputError{msg: fmt.Sprintf(format, a...)} }

// InputMessage is the message of a refused form, or "" for other errors.
func InputMessage(err error) string {
	var ie *InputError
	if errors.As(err, &ie) {
		return ie.msg
	}
	return ""
}

// errNoStore is returned when the manager was built without a Store.
var errNoStore = errors.New("MCP servers cannot be stored here")

// Secret keys in models.StoredMCPServer.Secrets. The URL is one: its
// query or user info can carry a token.
func envKey(name string) string    { return "env:" + name }
func headerKey(name string) string { return "header:" + name }

const urlKey = "url"

// Form is a server as the Settings form submits it. Env, Headers and URL
// are write-only: a line naming a variable (header) with an empty value
// keeps the stored value, a name left out is removed, and an empty URL
// keeps the stored one.
type Form struct {
	Name          string
	Transport     string // stdio | http
	Command       string
	Args          string // one per line
	Env           string // NAME=value lines
	EnvAllow      string // names, comma, space or newline separated
	ReadOnlyPaths string // one per line
	URL           string
	Headers       string // "Name: value" lines
	ReadOnly      bool
	Timeout       string
	StartTimeout  string
}

// StoredView is a server added in Settings as its edit form shows it:
// names of env variables and headers, never their values, and the URL
// without user info, query or fragment.
type StoredView struct {
	Name, Transport, Command, URL string
	Args, EnvAllow, ReadOnlyPaths []string
	EnvNames, HeaderNames         []string
	ReadOnly                      bool
	Timeout, StartTimeout         string
	// Error says why the stored server is not in use (its secrets cannot
	// be opened, or it no longer validates); "" when it is.
	Error string
}

// storedSpec is models.StoredMCPServer.Spec: the file's form without
// secret values (URL, env and header values are in the secrets), plus the
// names of the secret ones.
type storedSpec struct {
	fileServer
	Transport   string   `json:"transport"` // stdio | http
	EnvNames    []string `json:"envNames,omitempty"`
	HeaderNames []string `json:"headerNames,omitempty"`
}

// Load reads the servers added in Settings and makes the manager's list
// the file's servers followed by them. A stored server that does not
// validate, whose secrets cannot be opened or whose name the file took is
// logged and left out; the others apply. Replicas call it again when
// another replica changed the list.
func (m *Manager) Load(ctx context.Context) error {
	if m.opts.Store == nil {
		return nil
	}
	rows, err := m.opts.Store.MCPServers(ctx)
	if err != nil {
		return fmt.Errorf("MCP servers from Settings: %w", err)
	}
	var stored []Server
	for _, r := range rows {
		srv, err := m.fromRow(r)
		if err != nil {
			m.log.WarnContext(ctx, "MCP server from Settings left out", "server", r.Name, "err", err)
			continue
		}
		stored = append(stored, srv)
	}
	m.mu.Lock()
	m.servers = append(slices.Clip(m.file), stored...)
	m.mu.Unlock()
	return nil
}

// fromRow builds a stored server.
func (m *Manager) fromRow(r models.StoredMCPServer) (Server, error) {
	if r.SecretsError != nil {
		return Server{}, r.SecretsError
	}
	if m.fileHas(r.Name) {
		return Server{}, fmt.Errorf("the config file defines a server of the same name")
	}
	var spec storedSpec
	if err := json.Unmarshal([]byte(r.Spec), &spec); err != nil {
		return Server{}, fmt.Errorf("stored configuration: %w", err)
	}
	f := spec.fileServer
	if spec.Transport == "http" {
		f.URL = r.Secrets[urlKey]
		if f.URL == "" {
			return Server{}, errors.New("its URL is missing")
		}
	}
	for _, n := range spec.EnvNames {
		if f.Env == nil {
			f.Env = map[string]string{}
		}
		f.Env[n] = r.Secrets[envKey(n)]
	}
	for _, n := range spec.HeaderNames {
		if f.Headers == nil {
			f.Headers = map[string]string{}
		}
		f.Headers[n] = r.Secrets[headerKey(n)]
	}
	srv, err := checkServer(r.Name, f, literal)
	if err != nil {
		return Server{}, err
	}
	srv.Origin = OriginSettings
	return srv, nil
}

// literal takes a Settings value as written: ${NAME} is not expanded there
// (the value is the secret itself).
func literal(v string) (string, error) { return v, nil }

func (m *Manager) fileHas(name string) bool {
	return slices.ContainsFunc(m.file, func(s Server) bool { return strings.EqualFold(s.Name, name) })
}

// Save adds or replaces a server from the Settings form and applies it.
func (m *Manager) Save(ctx context.Context, f Form) error {
	if m.opts.Store == nil {
		return errNoStore
	}
	name := strings.TrimSpace(f.Name)
	if !serverNamePattern.MatchString(name) {
		return inputf("The name must be 1 to 30 letters, digits or '-', starting with a letter or digit (it prefixes the tools' names).")
	}
	if m.fileHas(name) {
		return inputf("The config file (HARNESS_MCP_CONFIG) defines a server named %s; it cannot be changed here.", name)
	}
	prev, err := m.storedSecrets(ctx, name)
	if err != nil {
		return err
	}
	spec, secrets, err := f.spec(prev)
	if err != nil {
		return err
	}
	// The stored form must build the same server the form describes.
	row := models.StoredMCPServer{Name: name, Secrets: secrets}
	b, err := json.Marshal(spec)
	if err != nil {
		return fmt.Errorf("MCP server %s: %w", name, err)
	}
	row.Spec = string(b)
	if _, err := m.fromRow(row); err != nil {
		return inputf("Server %s: %s.", name, err.Error())
	}
	if err := m.opts.Store.SaveMCPServer(ctx, row); err != nil {
		return err
	}
	m.changed()
	return m.Load(ctx)
}

// storedSecrets are the secret values stored for name (none for a new
// server). A server whose secrets cannot be opened is saved anew with
// only the values the form gives.
func (m *Manager) storedSecrets(ctx context.Context, name string) (map[string]string, error) {
	rows, err := m.opts.Store.MCPServers(ctx)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if r.Name == name {
			return r.Secrets, nil
		}
	}
	return nil, nil
}

// Delete removes a server added in Settings and applies the change.
func (m *Manager) Delete(ctx context.Context, name string) error {
	if m.opts.Store == nil {
		return errNoStore
	}
	if m.fileHas(name) {
		return inputf("The config file (HARNESS_MCP_CONFIG) defines a server named %s; it cannot be removed here.", name)
	}
	if err := m.opts.Store.DeleteMCPServer(ctx, name); err != nil {
		return err
	}
	m.changed()
	return m.Load(ctx)
}

func (m *Manager) changed() {
	if m.opts.OnChange != nil {
		m.opts.OnChange()
	}
}

// Stored lists the servers added in Settings for their edit forms,
// including those left out (with the reason).
func (m *Manager) Stored(ctx context.Context) ([]StoredView, error) {
	if m.opts.Store == nil {
		return nil, nil
	}
	rows, err := m.opts.Store.MCPServers(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]StoredView, 0, len(rows))
	for _, r := range rows {
		var spec storedSpec
		v := StoredView{Name: r.Name}
		if err := json.Unmarshal([]byte(r.Spec), &spec); err != nil {
			v.Error = "its stored configuration does not parse"
			out = append(out, v)
			continue
		}
		v.Transport = spec.Transport
		v.Command, v.URL, v.Args, v.EnvAllow, v.ReadOnlyPaths = spec.Command, redactURL(r.Secrets[urlKey]), spec.Args, spec.EnvAllow, spec.ReadOnlyPaths
		v.EnvNames, v.HeaderNames, v.ReadOnly = spec.EnvNames, spec.HeaderNames, spec.ReadOnly
		v.Timeout, v.StartTimeout = spec.Timeout, spec.StartTimeout
		if _, err := m.fromRow(r); err != nil {
			v.Error = err.Error()
		}
		out = append(out, v)
	}
	return out, nil
}

// redactURL is what an edit form shows of a stored URL (an empty field
// keeps it): a query or user info, which can carry a token, is not echoed.
func redactURL(raw string) string {
	if raw == "" {
		return ""
	}
	return Server{URL: raw}.Target()
}

// spec turns the form into the stored configuration and its secrets;
// prev are the secrets stored so far (kept where a line gives a name and
// no value).
func (f Form) spec(prev map[string]string) (storedSpec, map[string]string, error) {
	var spec storedSpec
	secrets := map[string]string{}
	switch f.Transport {
	case "stdio":
		spec.Command = strings.TrimSpace(f.Command)
		if spec.Command == "" {
			return spec, nil, inputf("A stdio server needs a command.")
		}
		spec.Args = lines(f.Args)
		spec.EnvAllow = strings.FieldsFunc(f.EnvAllow, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' })
		spec.ReadOnlyPaths = lines(f.ReadOnlyPaths)
		names, err := secretLines(f.Env, "=", envKey, prev, secrets, "env")
		if err != nil {
			return spec, nil, err
		}
		spec.EnvNames = names
	case "http":
		u := strings.TrimSpace(f.URL)
		if u == "" {
			u = prev[urlKey]
		}
		if u == "" {
			return spec, nil, inputf("An HTTP server needs a URL.")
		}
		secrets[urlKey] = u
		names, err := secretLines(f.Headers, ":", headerKey, prev, secrets, "header")
		if err != nil {
			return spec, nil, err
		}
		spec.HeaderNames = names
	default:
		return spec, nil, inputf("Choose stdio or streamable HTTP.")
	}
	spec.Transport = f.Transport
	spec.ReadOnly = f.ReadOnly
	spec.Timeout, spec.StartTimeout = strings.TrimSpace(f.Timeout), strings.TrimSpace(f.StartTimeout)
	return spec, secrets, nil
}

// lines splits a textarea into its non-empty trimmed lines.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// secretLines reads "NAME<sep>value" lines into secrets (under key(NAME)),
// keeping prev's value for a name given without one, and returns the names
// in order. Errors name the line's name, never its value.
func secretLines(text, sep string, key func(string) string, prev, secrets map[string]string, what string) ([]string, error) {
	var names []string
	for _, l := range lines(text) {
		name, value, _ := strings.Cut(l, sep)
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if name == "" {
			return nil, inputf("A %s line has no name before %q.", what, sep)
		}
		if slices.Contains(names, name) {
			return nil, inputf("The %s %s is given twice.", what, name)
		}
		if value == "" {
			v, ok := prev[key(name)]
			if !ok {
				return nil, inputf("The %s %s has no value (a value is needed the first time; later an empty one keeps it).", what, name)
			}
			value = v
		}
		secrets[key(name)] = value
		names = append(names, name)
	}
	sort.Strings(names)
	return names, nil
}
