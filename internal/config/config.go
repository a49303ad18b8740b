// Package config is the server's typed configuration, read from flags and the
// environment (flags win), validated before anything starts.
package config

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"time"
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
	// TrustedOrigins are extra origins (scheme://host[:port]) allowed to open
	// the WebSocket, e.g. a TLS reverse proxy's public name.
	TrustedOrigins []string

	ShutdownTimeout time.Duration
	// IdleUnload is how long an idle agent stays in memory.
	IdleUnload time.Duration
}

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
		ShutdownTimeout: 10 * time.Second,
		IdleUnload:      10 * time.Minute,
	}
	level := envOr(getenv, "HARNESS_LOG_LEVEL", "info")
	origins := getenv("HARNESS_TRUSTED_ORIGINS")

	fs := flag.NewFlagSet("web", flag.ContinueOnError)
	fs.StringVar(&c.Addr, "addr", c.Addr, "listen address (HARNESS_ADDR)")
	fs.StringVar(&c.DataDir, "data", c.DataDir, "data directory (HARNESS_DATA_DIR)")
	fs.StringVar(&c.DBDriver, "db-driver", c.DBDriver, "database driver: sqlite or postgres (HARNESS_DB_DRIVER)")
	fs.StringVar(&c.DBDSN, "db-dsn", c.DBDSN, "database DSN; sqlite default <data>/harness.db (HARNESS_DB_DSN)")
	fs.StringVar(&level, "log-level", level, "debug, info, warn or error (HARNESS_LOG_LEVEL)")
	fs.StringVar(&c.LogFormat, "log-format", c.LogFormat, "text or json (HARNESS_LOG_FORMAT)")
	fs.StringVar(&origins, "trusted-origins", origins, "comma-separated extra WebSocket origins (HARNESS_TRUSTED_ORIGINS)")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "graceful shutdown budget")
	fs.DurationVar(&c.IdleUnload, "idle-unload", c.IdleUnload, "unload idle agents after this long")
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	if err := c.LogLevel.UnmarshalText([]byte(level)); err != nil {
		return Config{}, fmt.Errorf("log level %q: %w", level, err)
	}
	for _, o := range strings.Split(origins, ",") {
		if o = strings.TrimSpace(o); o != "" {
			c.TrustedOrigins = append(c.TrustedOrigins, strings.TrimRight(o, "/"))
		}
	}
	if c.DBDriver == "sqlite" && c.DBDSN == "" {
		c.DBDSN = filepath.Join(c.DataDir, "harness.db")
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
