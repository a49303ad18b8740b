// Package config is the server's typed configuration, read from flags and the
// environment (flags win), validated before anything starts.
package config

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"time"

	"harness/internal/sandbox"
)

// Config is everything cmd/web needs to start.
type Config struct {
	Addr    string // listen address; HARNESS_ADDR
	DataDir string // database, workspaces; HARNESS_DATA_DIR

	DBDriver string // sqlite | postgres; HARNESS_DB_DRIVER
	DBDSN    string // postgres DSN or sqlite path; HARNESS_DB_DSN (sqlite default: <data>/harness.db)

	LogLevel  slog.Level // HARNESS_LOG_LEVEL: debug|info|warn|error
	LogFormat string     // text | json; HARNESS_LOG_FORMAT

	// AdminPassword bootstraps the first admin when no user exists.
	// HARNESS_ADMIN_PASSWORD. Never logged.
	AdminPassword string
	// MetricsToken lets a scraper read /metrics with "Authorization:
	// Bearer <token>" and no login (HARNESS_METRICS_TOKEN; at least
	// MetricsTokenMin characters). Never logged.
	MetricsToken string
	// TrustedOrigins are extra origins (scheme://host[:port]) allowed to open
	// the WebSocket, e.g. a TLS reverse proxy's public name.
	TrustedOrigins []string
	// TrustedProxies are the peers whose X-Forwarded-For and
	// X-Forwarded-Proto are believed (HARNESS_TRUSTED_PROXIES; proxies.go).
	// Empty: the TCP peer is the client, even on loopback.
	TrustedProxies []netip.Prefix

	ShutdownTimeout time.Duration
	// DrainPeriod is how long a stopping server answers /readyz 503
	// "draining" while still serving everything, so load balancers stop
	// sending before it stops starting turns (HARNESS_DRAIN_PERIOD,
	// -drain-period; default 5s on PostgreSQL, where other replicas take
	// the traffic, and none on SQLite, where nobody would). It comes
	// before the shutdown budget: SIGTERM to exit takes at most both.
	DrainPeriod time.Duration
	// IdleUnload is how long an idle agent stays in memory.
	IdleUnload time.Duration

	// Sandbox confines tool processes: HARNESS_SANDBOX (mode),
	// HARNESS_SANDBOX_USER (uid[:gid] when root), HARNESS_SANDBOX_READONLY
	// (extra read-only paths, colon-separated), HARNESS_SANDBOX_LIMITS
	// (cpu=600,mem=4G,procs=512,fsize=2G,files=4096,disk=10G).
	Sandbox sandbox.Config
	// WorkspaceRoots are directories whose subdirectories users may open as
	// session workspaces (HARNESS_WORKSPACE_ROOTS); admins add more in
	// Settings.
	WorkspaceRoots []WorkspaceRoot
	// GitHosts are the hosts a session may clone from over https
	// (HARNESS_GIT_HOSTS, comma-separated); local repositories under a
	// workspace root the user may use are always allowed.
	GitHosts []string
	// FetchHosts are the hosts web_fetch may reach at loopback, private or
	// link-local addresses (HARNESS_FETCH_HOSTS, comma-separated: host,
	// host:port, *.domain or an IP address); public addresses need no entry,
	// and web_fetch runs only for sessions whose network is on.
	FetchHosts []string
	// ForkCopyMax caps the size of a workspace a fork copies
	// (HARNESS_FORK_COPY_MAX, e.g. 1G; 0 never copies).
	ForkCopyMax int64
	// AttachmentMax caps one uploaded image (HARNESS_ATTACHMENT_MAX, e.g.
	// 10M; default DefaultAttachmentMax, at most MaxAttachmentMax).
	AttachmentMax int64
	// MCPConfig is the file that lists the MCP servers sessions may use
	// (HARNESS_MCP_CONFIG; docs/mcp.md); empty: none.
	MCPConfig string

	// ClientLimits bound one client's sockets and request rate (client_limits.go).
	ClientLimits ClientLimits
	// Args are the words left after the flags. The server takes none, so
	// cmd/web refuses them as an unknown command instead of serving.
	Args []string

	// Replica is this process among the replicas on one PostgreSQL
	// database: id, advertised address, lease TTL (replica.go).
	Replica Replica
}

// WorkspaceRoot is a directory whose subdirectories may be opened as
// workspaces. Users empty means every user; Shared lets several sessions
// use one directory at once.
type WorkspaceRoot struct {
	Path   string   `json:"path"`
	Users  []string `json:"users,omitempty"`
	Shared bool     `json:"shared,omitempty"`
}

// DefaultForkCopyMax is the largest workspace a fork copies by default.
const DefaultForkCopyMax = 1 << 30

// DefaultAttachmentMax and MaxAttachmentMax bound one uploaded image: it
// is held in memory whole on its way in and, base64-encoded, in every
// model request of its session.
const (
	DefaultAttachmentMax = 10 << 20
	MaxAttachmentMax     = 64 << 20
)

// DefaultDrainPeriod is how long a stopping server says it is draining
// before it stops starting turns: a few load balancer health checks.
const DefaultDrainPeriod = 5 * time.Second

// MetricsTokenMin is the shortest metrics token accepted: it stands
// alone in front of /metrics, so it must not be guessable.
const MetricsTokenMin = 16

// Getenv reads one environment variable (os.Getenv in main, a map in tests).
type Getenv func(string) string

// Load parses args (without the program name) over environment defaults.
func Load(args []string, getenv Getenv) (Config, error) {
	c := Config{
		Addr:            envOr(getenv, "HARNESS_ADDR", "127.0.0.1:8080"),
		DataDir:         envOr(getenv, "HARNESS_DATA_DIR", "data"),
		DBDriver:        envOr(getenv, "HARNESS_DB_DRIVER", "sqlite"),
		DBDSN:           getenv("HARNESS_DB_DSN"),
		LogFormat:       envOr(getenv, "HARNESS_LOG_FORMAT", "text"),
		AdminPassword:   getenv("HARNESS_ADMIN_PASSWORD"),
		MetricsToken:    getenv("HARNESS_METRICS_TOKEN"),
		ShutdownTimeout: 10 * time.Second,
		DrainPeriod:     DefaultDrainPeriod,
		IdleUnload:      10 * time.Minute,
	}
	level := envOr(getenv, "HARNESS_LOG_LEVEL", "info")
	origins := getenv("HARNESS_TRUSTED_ORIGINS")
	var sbErrs []error
	if err := parseSandbox(&c.Sandbox, getenv); err != nil {
		sbErrs = append(sbErrs, err)
	}
	roots, err := ParseWorkspaceRoots(getenv("HARNESS_WORKSPACE_ROOTS"))
	if err != nil {
		sbErrs = append(sbErrs, err)
	}
	c.WorkspaceRoots = roots
	proxies, err := ParseTrustedProxies(getenv("HARNESS_TRUSTED_PROXIES"))
	if err != nil {
		sbErrs = append(sbErrs, err)
	}
	c.TrustedProxies = proxies
	c.GitHosts = splitList(getenv("HARNESS_GIT_HOSTS"), ",")
	c.FetchHosts = splitList(getenv("HARNESS_FETCH_HOSTS"), ",")
	c.MCPConfig = strings.TrimSpace(getenv("HARNESS_MCP_CONFIG"))
	c.ForkCopyMax = DefaultForkCopyMax
	if v := getenv("HARNESS_FORK_COPY_MAX"); v != "" {
		n, err := ParseSize(v)
		if err != nil {
			sbErrs = append(sbErrs, fmt.Errorf("HARNESS_FORK_COPY_MAX: %w", err))
		}
		c.ForkCopyMax = n
	}
	c.AttachmentMax = DefaultAttachmentMax
	if v := getenv("HARNESS_ATTACHMENT_MAX"); v != "" {
		n, err := ParseSize(v)
		if err != nil {
			sbErrs = append(sbErrs, fmt.Errorf("HARNESS_ATTACHMENT_MAX: %w", err))
		}
		c.AttachmentMax = n
	}
	if v := getenv("HARNESS_SHUTDOWN_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			sbErrs = append(sbErrs, fmt.Errorf("HARNESS_SHUTDOWN_TIMEOUT: %w", err))
		}
		c.ShutdownTimeout = d
	}
	drainSet := getenv("HARNESS_DRAIN_PERIOD") != ""
	if v := getenv("HARNESS_DRAIN_PERIOD"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			sbErrs = append(sbErrs, fmt.Errorf("HARNESS_DRAIN_PERIOD: %w", err))
		}
		c.DrainPeriod = d
	}
	if err := parseClientLimits(&c.ClientLimits, getenv); err != nil {
		sbErrs = append(sbErrs, err)
	}
	if err := parseReplica(&c.Replica, getenv); err != nil {
		sbErrs = append(sbErrs, err)
	}
	if c.MetricsToken != "" && len(c.MetricsToken) < MetricsTokenMin {
		// Never the token itself in the message.
		sbErrs = append(sbErrs, fmt.Errorf("HARNESS_METRICS_TOKEN: at least %d characters", MetricsTokenMin))
	}
	if err := errors.Join(sbErrs...); err != nil {
		return Config{}, err
	}

	fs := flag.NewFlagSet("web", flag.ContinueOnError)
	fs.StringVar(&c.Addr, "addr", c.Addr, "listen address (HARNESS_ADDR)")
	fs.StringVar(&c.DataDir, "data", c.DataDir, "data directory (HARNESS_DATA_DIR)")
	fs.StringVar(&c.DBDriver, "db-driver", c.DBDriver, "database driver: sqlite or postgres (HARNESS_DB_DRIVER)")
	fs.StringVar(&c.DBDSN, "db-dsn", c.DBDSN, "database DSN; sqlite default <data>/harness.db (HARNESS_DB_DSN)")
	fs.StringVar(&level, "log-level", level, "debug, info, warn or error (HARNESS_LOG_LEVEL)")
	fs.StringVar(&c.LogFormat, "log-format", c.LogFormat, "text or json (HARNESS_LOG_FORMAT)")
	fs.StringVar(&origins, "trusted-origins", origins, "comma-separated extra WebSocket origins (HARNESS_TRUSTED_ORIGINS)")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "graceful shutdown budget (HARNESS_SHUTDOWN_TIMEOUT)")
	fs.DurationVar(&c.DrainPeriod, "drain-period", c.DrainPeriod, "at shutdown, how long /readyz answers 503 before turns stop starting (HARNESS_DRAIN_PERIOD; default 5s on PostgreSQL, 0 on SQLite)")
	fs.DurationVar(&c.IdleUnload, "idle-unload", c.IdleUnload, "unload idle agents after this long")
	replicaFlags(fs, &c.Replica)
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	c.Args = fs.Args()
	fs.Visit(func(f *flag.Flag) { drainSet = drainSet || f.Name == "drain-period" })
	if !drainSet && c.DBDriver == "sqlite" {
		// One process: no other replica would take the traffic, and a
		// container's stop grace (often 10 s) should go to the turns.
		c.DrainPeriod = 0
	}
	if err := c.LogLevel.UnmarshalText([]byte(level)); err != nil {
		return Config{}, fmt.Errorf("log level %q: %w", level, err)
	}
	for _, o := range strings.Split(origins, ",") {
		if o = strings.TrimSpace(o); o != "" {
			c.TrustedOrigins = append(c.TrustedOrigins, strings.TrimRight(o, "/"))
		}
	}
	// A relative data directory is made absolute once, here: workspace paths
	// are stored and handed to the sandbox, and must not depend on the
	// directory the server happens to start in.
	if c.DataDir != "" && !filepath.IsAbs(c.DataDir) {
		abs, err := filepath.Abs(c.DataDir)
		if err != nil {
			return Config{}, fmt.Errorf("data directory %q: %w", c.DataDir, err)
		}
		c.DataDir = abs
	}
	if c.DBDriver == "sqlite" && c.DBDSN == "" {
		c.DBDSN = filepath.Join(c.DataDir, "harness.db")
	}
	if c.Replica.ID == "" {
		c.Replica.ID = DefaultReplicaID(c.DataDir, c.Addr)
	}
	return c, c.Validate()
}

// Validate reports every problem at once.
func (c Config) Validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		errs = append(errs, fmt.Errorf("addr %q: %w", c.Addr, err))
	}
	if c.DataDir == "" {
		errs = append(errs, errors.New("data directory is empty"))
	}
	switch c.DBDriver {
	case "sqlite":
	case "postgres":
		if c.DBDSN == "" {
			errs = append(errs, errors.New("postgres needs HARNESS_DB_DSN"))
		}
	default:
		errs = append(errs, fmt.Errorf("db driver %q: want sqlite or postgres", c.DBDriver))
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		errs = append(errs, fmt.Errorf("log format %q: want text or json", c.LogFormat))
	}
	for _, o := range c.TrustedOrigins {
		if !strings.HasPrefix(o, "http://") && !strings.HasPrefix(o, "https://") {
			errs = append(errs, fmt.Errorf("trusted origin %q: want scheme://host[:port]", o))
		}
	}
	if c.ShutdownTimeout <= 0 {
		errs = append(errs, errors.New("shutdown timeout must be positive"))
	}
	if c.DrainPeriod < 0 {
		errs = append(errs, errors.New("drain period must not be negative"))
	}
	if err := c.Sandbox.Validate(); err != nil {
		errs = append(errs, err)
	}
	for _, r := range c.WorkspaceRoots {
		if !filepath.IsAbs(r.Path) {
			errs = append(errs, fmt.Errorf("workspace root %q must be an absolute path", r.Path))
		}
	}
	if c.ForkCopyMax < 0 {
		errs = append(errs, errors.New("the fork copy cap must not be negative"))
	}
	if c.AttachmentMax <= 0 || c.AttachmentMax > MaxAttachmentMax {
		errs = append(errs, fmt.Errorf("the attachment cap (HARNESS_ATTACHMENT_MAX) must be from 1 byte to %d MiB", MaxAttachmentMax>>20))
	}
	if err := c.Replica.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Loopback reports whether Addr binds only the loopback interface.
func (c Config) Loopback() bool {
	host, _, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func envOr(getenv Getenv, key, def string) string {
	if v := getenv(key); v != "" {
		return v
	}
	return def
}

// parseSandbox reads the sandbox variables.
func parseSandbox(sc *sandbox.Config, getenv Getenv) error {
	var errs []error
	mode, err := sandbox.ParseMode(getenv("HARNESS_SANDBOX"))
	if err != nil {
		errs = append(errs, fmt.Errorf("HARNESS_SANDBOX: %w", err))
	}
	sc.Mode = mode
	if v := getenv("HARNESS_SANDBOX_USER"); v != "" {
		uid, gid, err := sandbox.ParseIdentity(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("HARNESS_SANDBOX_USER: %w", err))
		}
		sc.UID, sc.GID = uid, gid
	}
	sc.ReadOnly = splitList(getenv("HARNESS_SANDBOX_READONLY"), ":")
	if v := getenv("HARNESS_SANDBOX_LIMITS"); v != "" {
		l, err := parseLimits(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("HARNESS_SANDBOX_LIMITS: %w", err))
		}
		sc.Limits = l
	}
	return errors.Join(errs...)
}

// parseLimits reads "cpu=600,mem=4G,procs=512,fsize=2G,files=4096,disk=10G";
// keys left out keep their defaults. mem and procs are per session where
// cgroups are in force, disk per workspace.
func parseLimits(s string) (sandbox.Limits, error) {
	var l sandbox.Limits
	for _, kv := range splitList(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return l, fmt.Errorf("%q: want key=value", kv)
		}
		n, err := ParseSize(v)
		if err != nil || n <= 0 {
			return l, fmt.Errorf("%q: want a positive number", kv)
		}
		switch strings.TrimSpace(k) {
		case "cpu":
			l.CPUSeconds = uint64(n)
		case "mem":
			l.MemoryBytes = uint64(n)
		case "procs":
			l.Processes = uint64(n)
		case "fsize":
			l.FileSizeBytes = uint64(n)
		case "files":
			l.OpenFiles = uint64(n)
		case "disk":
			l.DiskBytes = uint64(n)
		default:
			return l, fmt.Errorf("unknown limit %q: want cpu, mem, procs, fsize, files or disk", k)
		}
	}
	return l, nil
}

// ParseSize reads a byte count with an optional K, M, G or T suffix
// (powers of 1024).
func ParseSize(s string) (int64, error) {
	s = strings.TrimSpace(strings.ToUpper(s))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40}} {
		if rest, ok := strings.CutSuffix(strings.TrimSuffix(s, "B"), u.suffix); ok {
			s, mult = rest, u.m
			break
		}
	}
	var n int64
	if _, err := fmt.Sscanf(s, "%d", &n); err != nil || n < 0 || fmt.Sprint(n) != s {
		return 0, fmt.Errorf("size %q: want a number with an optional K, M, G or T", s)
	}
	return n * mult, nil
}

// ParseWorkspaceRoots reads HARNESS_WORKSPACE_ROOTS: entries separated by
// ";", each a path optionally followed by "?users=alice,bob&shared=1".
func ParseWorkspaceRoots(s string) ([]WorkspaceRoot, error) {
	var out []WorkspaceRoot
	for _, entry := range splitList(s, ";") {
		path, query, _ := strings.Cut(entry, "?")
		r := WorkspaceRoot{Path: filepath.Clean(strings.TrimSpace(path))}
		if !filepath.IsAbs(r.Path) {
			return nil, fmt.Errorf("HARNESS_WORKSPACE_ROOTS: %q is not an absolute path", path)
		}
		for _, kv := range splitList(query, "&") {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "users":
				r.Users = splitList(v, ",")
			case "shared":
				r.Shared = v == "1" || v == "true" || v == "yes"
			default:
				return nil, fmt.Errorf("HARNESS_WORKSPACE_ROOTS: %q: unknown option %q (want users or shared)", entry, k)
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// splitList splits s on sep, trimming blanks and dropping empty items.
func splitList(s, sep string) []string {
	var out []string
	for _, p := range strings.Split(s, sep) {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
