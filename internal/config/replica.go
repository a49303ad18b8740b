package config

import (
	"crypto/sha256"
	"encoding/hex"
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
	// -replica-id; default DefaultReplicaID: the same across restarts on
	// one host, data directory and listen address, so a restarted replica
	// takes back its own leases at once).
	ID string
	// Advertise is the host:port other replicas reach this one at
	// (HARNESS_ADVERTISE_ADDR, -advertise); empty: derived from the listen
	// address (Config.Advertised).
	Advertise string
	// LeaseTTL is how long a session's lease lasts without renewal
	// (HARNESS_LEASE_TTL, -lease-ttl; default 8s, renewed at a third of
	// it): a dead owner's sessions wait at most this long for a new one.
	LeaseTTL time.Duration
	// Heartbeat is how often a replica renews its heartbeat and its leases
	// (HARNESS_REPLICA_HEARTBEAT, -replica-heartbeat; default 500ms).
	Heartbeat time.Duration
	// StaleAfter is how old an owner's heartbeat may grow before another
	// replica takes its sessions over without waiting for their leases to
	// expire (HARNESS_REPLICA_STALE_AFTER, -replica-stale-after; default
	// 2s, at least three heartbeats): a killed owner's sessions move in
	// about StaleAfter plus a heartbeat.
	StaleAfter time.Duration
}

// Heartbeat and stale-bound defaults.
const (
	DefaultHeartbeat  = 500 * time.Millisecond
	DefaultStaleAfter = 2 * time.Second
	// MinHeartbeat bounds the renewal statement's rate.
	MinHeartbeat = 50 * time.Millisecond
)

// DefaultLeaseTTL is the default session lease TTL: a killed replica's
// sessions are taken over within about TTL + TTL/8, under 10 s.
const DefaultLeaseTTL = 8 * time.Second

// MinLeaseTTL is the shortest lease TTL Validate accepts: renewal runs at a
// third of the TTL and must finish within that, or a busy database would
// cost owners their sessions.
const MinLeaseTTL = 300 * time.Millisecond

// DefaultReplicaID is the host name and a digest of the data directory
// and the listen address, e.g. "web1-3f9a0c2e": readable in logs, the
// same after a restart (a process that died holding leases is succeeded
// by one of its id, which takes them back without waiting for them to
// lapse), and different for two servers on one host, which cannot listen
// on one address. Two that listen on any port (":0") of one host and data
// directory need their own HARNESS_REPLICA_ID: the second one's start
// fails, saying so.
func DefaultReplicaID(dataDir, addr string) string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "harness"
	}
	sum := sha256.Sum256([]byte(dataDir + "\x00" + addr))
	return host + "-" + hex.EncodeToString(sum[:4])
}

// WithDefaults fills the zero fields (configurations built in code rather
// than by Load) of a server on dataDir listening on addr.
func (r Replica) WithDefaults(dataDir, addr string) Replica {
	if r.ID == "" {
		r.ID = DefaultReplicaID(dataDir, addr)
	}
	if r.LeaseTTL == 0 {
		r.LeaseTTL = DefaultLeaseTTL
	}
	if r.Heartbeat == 0 {
		r.Heartbeat = DefaultHeartbeat
	}
	if r.StaleAfter == 0 {
		r.StaleAfter = DefaultStaleAfter
	}
	return r
}

// Beat is the heartbeat period and the stale bound in effect: at most a
// third and all of the lease TTL (a short TTL test needs no other knob).
func (r Replica) Beat() (every, stale time.Duration) {
	return min(r.Heartbeat, r.LeaseTTL/3), min(r.StaleAfter, r.LeaseTTL)
}

// parseReplica reads the environment's replica settings.
func parseReplica(r *Replica, getenv Getenv) error {
	// Empty: Load derives the default once the data directory and the
	// address are known (flags included).
	r.ID = getenv("HARNESS_REPLICA_ID")
	r.Advertise = getenv("HARNESS_ADVERTISE_ADDR")
	r.LeaseTTL = DefaultLeaseTTL
	if v := getenv("HARNESS_LEASE_TTL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("HARNESS_LEASE_TTL: %w", err)
		}
		r.LeaseTTL = d
	}
	r.Heartbeat, r.StaleAfter = DefaultHeartbeat, DefaultStaleAfter
	for _, v := range []struct {
		name string
		to   *time.Duration
	}{{"HARNESS_REPLICA_HEARTBEAT", &r.Heartbeat}, {"HARNESS_REPLICA_STALE_AFTER", &r.StaleAfter}} {
		s := getenv(v.name)
		if s == "" {
			continue
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("%s: %w", v.name, err)
		}
		*v.to = d
	}
	return nil
}

// replicaFlags registers the replica flags over the environment's values.
func replicaFlags(fs *flag.FlagSet, r *Replica) {
	fs.StringVar(&r.ID, "replica-id", r.ID, "this replica's id on a shared PostgreSQL database (HARNESS_REPLICA_ID)")
	fs.StringVar(&r.Advertise, "advertise", r.Advertise, "host:port other replicas reach this one at (HARNESS_ADVERTISE_ADDR)")
	fs.DurationVar(&r.LeaseTTL, "lease-ttl", r.LeaseTTL, "session lease TTL on PostgreSQL (HARNESS_LEASE_TTL)")
	fs.DurationVar(&r.Heartbeat, "replica-heartbeat", r.Heartbeat, "how often a replica renews its heartbeat and leases (HARNESS_REPLICA_HEARTBEAT)")
	fs.DurationVar(&r.StaleAfter, "replica-stale-after", r.StaleAfter, "heartbeat age after which another replica takes an owner's sessions over (HARNESS_REPLICA_STALE_AFTER)")
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
	if r.Heartbeat < MinHeartbeat {
		errs = append(errs, fmt.Errorf("replica heartbeat %s: want at least %s", r.Heartbeat, MinHeartbeat))
	}
	// Three heartbeats may fail (a slow statement, a blip) before the
	// owner's sessions move.
	if r.StaleAfter < 3*r.Heartbeat {
		errs = append(errs, fmt.Errorf("replica stale bound %s: want at least three heartbeats (%s)", r.StaleAfter, 3*r.Heartbeat))
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
