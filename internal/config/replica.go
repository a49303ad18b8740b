package config

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
	"unicode"
)

// Replica is this process's identity among the replicas on one PostgreSQL
// database (docs/deploy.md "Replicas on PostgreSQL"). SQLite runs one
// process and takes no leases: only ID names it in logs there.
type Replica struct {
	// ID names this process among the replicas (HARNESS_REPLICA_ID,
	// -replica-id; default hostname-pid, so two replicas on one machine
	// differ without configuration).
	ID string
	// Advertise is the host:port other replicas reach this one at
	// (HARNESS_ADVERTISE_ADDR, -advertise); empty: derived from the listen
	// address (Config.Advertised).
	Advertise string
	// LeaseTTL is how long a session's lease lasts without renewal
	// (HARNESS_LEASE_TTL, -lease-ttl; default 8s, renewed at a third of
	// it): a dead owner's sessions wait at most this long for a new one.
	LeaseTTL time.Duration
}

// DefaultLeaseTTL is the default session lease TTL: a killed replica's
// sessions are taken over within about TTL + TTL/8, under 10 s.
const DefaultLeaseTTL = 8 * time.Second

// MinLeaseTTL is the shortest lease TTL Validate accepts: renewal runs at a
// third of the TTL and must finish within that, or a busy database would
// cost owners their sessions.
const MinLeaseTTL = 300 * time.Millisecond

// DefaultReplicaID is hostname-pid: unique among the processes of one
// machine and readable in logs.
func DefaultReplicaID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "harness"
	}
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}

// WithDefaults fills the zero fields (configurations built in code rather
// than by Load).
func (r Replica) WithDefaults() Replica {
	if r.ID == "" {
		r.ID = DefaultReplicaID()
	}
	if r.LeaseTTL == 0 {
		r.LeaseTTL = DefaultLeaseTTL
	}
	return r
}

// parseReplica reads the environment's replica settings.
func parseReplica(r *Replica, getenv Getenv) error {
	r.ID = envOr(getenv, "HARNESS_REPLICA_ID", DefaultReplicaID())
	r.Advertise = getenv("HARNESS_ADVERTISE_ADDR")
	r.LeaseTTL = DefaultLeaseTTL
	if v := getenv("HARNESS_LEASE_TTL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("HARNESS_LEASE_TTL: %w", err)
		}
		r.LeaseTTL = d
	}
	return nil
}

// replicaFlags registers the replica flags over the environment's values.
func replicaFlags(fs *flag.FlagSet, r *Replica) {
	fs.StringVar(&r.ID, "replica-id", r.ID, "this replica's id on a shared PostgreSQL database (HARNESS_REPLICA_ID)")
	fs.StringVar(&r.Advertise, "advertise", r.Advertise, "host:port other replicas reach this one at (HARNESS_ADVERTISE_ADDR)")
	fs.DurationVar(&r.LeaseTTL, "lease-ttl", r.LeaseTTL, "session lease TTL on PostgreSQL (HARNESS_LEASE_TTL)")
}

// Validate reports every problem of the replica settings at once.
func (r Replica) Validate() error {
	var errs []error
	if r.ID == "" || len(r.ID) > 128 || strings.ContainsFunc(r.ID, unicode.IsSpace) {
		errs = append(errs, fmt.Errorf("replica id %q: want 1 to 128 characters without spaces", r.ID))
	}
	if r.Advertise != "" {
		if host, port, err := net.SplitHostPort(r.Advertise); err != nil || host == "" || port == "" || port == "0" {
			errs = append(errs, fmt.Errorf("advertised address %q: want host:port with a fixed port", r.Advertise))
		}
	}
	if r.LeaseTTL < MinLeaseTTL {
		errs = append(errs, fmt.Errorf("lease TTL %s: want at least %s", r.LeaseTTL, MinLeaseTTL))
	}
	return errors.Join(errs...)
}

// Advertised is the address other replicas reach this one at:
// Replica.Advertise when set, else the listen address with the port
// actually bound (bound, when known) and this host's name for an
// unspecified host.
func (c Config) Advertised(bound net.Addr) string {
	if c.Replica.Advertise != "" {
		return c.Replica.Advertise
	}
	host, port, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return c.Addr
	}
	if tcp, ok := bound.(*net.TCPAddr); ok && tcp != nil {
		port = fmt.Sprint(tcp.Port)
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		if h, err := os.Hostname(); err == nil && h != "" {
			host = h
		} else {
			host = "127.0.0.1"
		}
	}
	return net.JoinHostPort(host, port)
}
