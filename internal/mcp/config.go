package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

// Defaults of a server's timeouts.
const (
	DefaultCallTimeout  = 2 * time.Minute
	DefaultStartTimeout = 30 * time.Second
)

// Config is the MCP servers an admin configured (HARNESS_MCP_CONFIG):
//
//	{"servers": {"NAME": {...}, ...}}
//
// docs/mcp.md describes each field.
type Config struct {
	Servers []Server
}

// Server is one configured MCP server: stdio (Command) or streamable HTTP
// (URL).
type Server struct {
	// Name prefixes its tools: NAME__TOOL.
	Name string
	// Origin says where the server was configured.
	Origin Origin
	// Command, Args: a stdio server, started in each session's sandbox with
	// the workspace as its working directory.
	Command string
	Args    []string
	// Env are variables set for a stdio server (values may be secrets);
	// EnvAllow names the server process's variables passed through. Nothing
	// else of the server's environment reaches the process.
	Env      map[string]string
	EnvAllow []string
	// ReadOnlyPaths are host paths the sandbox lets a stdio server read
	// besides the system (its installation).
	ReadOnlyPaths []string
	// URL: a streamable HTTP server, reached from the server process.
	URL string
	// Headers are sent with every HTTP request; their values are secrets:
	// never logged, never sent to a browser.
	Headers map[string]string
	// ReadOnly marks every tool of the server as reading only: no approval
	// in ask mode, allowed in read-only mode. Otherwise its tools count as
	// "exec".
	ReadOnly bool
	// CallTimeout bounds one tool call; StartTimeout the start, handshake
	// and listing.
	CallTimeout  time.Duration
	StartTimeout time.Duration
}

// Origin is where a server was configured.
type Origin string

const (
	OriginFile     Origin = "file"     // HARNESS_MCP_CONFIG
	OriginSettings Origin = "settings" // added by an admin in Settings
)

// sameAs reports whether a connection made for s also serves o: every
// field equal, secrets included (a new header value needs a new
// connection).
func (s Server) sameAs(o Server) bool {
	return s.Name == o.Name && s.Origin == o.Origin && s.Command == o.Command && slices.Equal(s.Args, o.Args) &&
		maps.Equal(s.Env, o.Env) && slices.Equal(s.EnvAllow, o.EnvAllow) && slices.Equal(s.ReadOnlyPaths, o.ReadOnlyPaths) &&
		s.URL == o.URL && maps.Equal(s.Headers, o.Headers) && s.ReadOnly == o.ReadOnly &&
		s.CallTimeout == o.CallTimeout && s.StartTimeout == o.StartTimeout
}

// Transport names the server's transport for pages and logs.
func (s Server) Transport() string {
	if s.URL != "" {
		return "http"
	}
	return "stdio"
}

// Target is what pages show of where the server runs, without secrets: the
// command and its arguments, or the URL without user info, query or
// fragment (they can carry tokens).
func (s Server) Target() string {
	if s.URL == "" {
		return strings.TrimSpace(s.Command + " " + strings.Join(s.Args, " "))
	}
	u, err := url.Parse(s.URL)
	if err != nil {
		return "(invalid URL)"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// serverNamePattern keeps NAME__TOOL unambiguous: no underscores in NAME.
var serverNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,29}$`)

var envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// fileServer is a server in the file's JSON.
type fileServer struct {
	Command       string            `json:"command"`
	Args          []string          `json:"args"`
	Env           map[string]string `json:"env"`
	EnvAllow      []string          `json:"envAllow"`
	ReadOnlyPaths []string          `json:"readOnlyPaths"`
	URL           string            `json:"url"`
	Headers       map[string]string `json:"headers"`
	ReadOnly      bool              `json:"readOnly"`
	Timeout       string            `json:"timeout"`
	StartTimeout  string            `json:"startTimeout"`
}

// LoadConfig reads the config file at path; "" is no servers. getenv
// expands ${NAME} in env and header values, so secrets can stay out of the
// file.
func LoadConfig(path string, getenv func(string) string) (Config, error) {
	if path == "" {
		return Config{}, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("MCP config: %w", err)
	}
	cfg, err := ParseConfig(b, getenv)
	if err != nil {
		return Config{}, fmt.Errorf("MCP config %s: %w", path, err)
	}
	return cfg, nil
}

// ParseConfig parses and checks a config file's content. Errors never
// quote env or header values.
func ParseConfig(b []byte, getenv func(string) string) (Config, error) {
	var doc struct {
		Servers map[string]fileServer `json:"servers"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return Config{}, fmt.Errorf("invalid JSON: %w", err)
	}
	names := make([]string, 0, len(doc.Servers))
	for n := range doc.Servers {
		names = append(names, n)
	}
	sort.Strings(names)
	var cfg Config
	for _, n := range names {
		s, err := checkServer(n, doc.Servers[n], func(v string) (string, error) { return expand(v, getenv) })
		if err != nil {
			return Config{}, fmt.Errorf("server %q: %w", n, err)
		}
		cfg.Servers = append(cfg.Servers, s)
	}
	return cfg, nil
}

// checkServer validates one server; value turns a configured env or
// header value into the one used (the file's ${NAME} expansion, or as
// written for Settings).
func checkServer(name string, f fileServer, value func(string) (string, error)) (Server, error) {
	if !serverNamePattern.MatchString(name) {
		return Server{}, fmt.Errorf("the name must match %s (it prefixes the tools' names)", serverNamePattern)
	}
	s := Server{Name: name, Command: f.Command, Args: f.Args, EnvAllow: f.EnvAllow, ReadOnlyPaths: f.ReadOnlyPaths,
		URL: f.URL, ReadOnly: f.ReadOnly, CallTimeout: DefaultCallTimeout, StartTimeout: DefaultStartTimeout}
	var err error
	if s.CallTimeout, err = parseTimeout(f.Timeout, DefaultCallTimeout); err != nil {
		return Server{}, fmt.Errorf("timeout: %w", err)
	}
	if s.StartTimeout, err = parseTimeout(f.StartTimeout, DefaultStartTimeout); err != nil {
		return Server{}, fmt.Errorf("startTimeout: %w", err)
	}
	switch {
	case f.Command != "" && f.URL != "":
		return Server{}, errors.New("set command (stdio) or url (streamable HTTP), not both")
	case f.Command == "" && f.URL == "":
		return Server{}, errors.New("set command (stdio) or url (streamable HTTP)")
	case f.URL != "":
		if len(f.Args) > 0 || len(f.Env) > 0 || len(f.EnvAllow) > 0 || len(f.ReadOnlyPaths) > 0 {
			return Server{}, errors.New("args, env, envAllow and readOnlyPaths are for stdio servers")
		}
		u, err := url.Parse(f.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return Server{}, errors.New("url must be an absolute http or https URL")
		}
		s.Headers = map[string]string{}
		for k, v := range f.Headers {
			if k == "" || http.CanonicalHeaderKey(k) == "" || strings.ContainsAny(k, " :\r\n") {
				return Server{}, fmt.Errorf("header name %q is invalid", k)
			}
			ev, err := value(v)
			if err != nil {
				return Server{}, fmt.Errorf("header %s: %w", k, err)
			}
			if strings.ContainsAny(ev, "\r\n") {
				return Server{}, fmt.Errorf("header %s: the value contains a line break", k)
			}
			s.Headers[k] = ev
		}
	default:
		if len(f.Headers) > 0 {
			return Server{}, errors.New("headers are for HTTP servers")
		}
		s.Env = map[string]string{}
		for k, v := range f.Env {
			if !envNamePattern.MatchString(k) {
				return Server{}, fmt.Errorf("env name %q is invalid", k)
			}
			ev, err := value(v)
			if err != nil {
				return Server{}, fmt.Errorf("env %s: %w", k, err)
			}
			s.Env[k] = ev
		}
		for _, k := range f.EnvAllow {
			if !envNamePattern.MatchString(k) {
				return Server{}, fmt.Errorf("envAllow name %q is invalid", k)
			}
		}
		for _, p := range f.ReadOnlyPaths {
			if !filepath.IsAbs(p) {
				return Server{}, fmt.Errorf("readOnlyPaths: %q is not absolute", p)
			}
		}
	}
	return s, nil
}

func parseTimeout(s string, def time.Duration) (time.Duration, error) {
	if s == "" {
		return def, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q is not a positive duration (e.g. 90s)", s)
	}
	return d, nil
}

// expand replaces ${NAME} with the server's environment; an unset or empty
// variable is an error, so a missing secret is found at start. Nothing
// else is special ("$x" stays as written).
func expand(v string, getenv func(string) string) (string, error) {
	var missing []string
	out := refPattern.ReplaceAllStringFunc(v, func(m string) string {
		k := m[2 : len(m)-1]
		x := ""
		if getenv != nil {
			x = getenv(k)
		}
		if x == "" {
			missing = append(missing, k)
		}
		return x
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("environment variable %s is not set", strings.Join(missing, ", "))
	}
	return out, nil
}

var refPattern = regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*\}`)
