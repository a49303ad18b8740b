package app

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"harness/internal/egress"
	"harness/internal/tools/builtin"
)

// web_fetch runs in the server process. Whatever an admin allow-lists, it
// must never reach this server's own listener or its database: reserved
// holds their addresses, and the tool's guard asks it on every connection.

// reserved are the addresses of this server's listeners and database.
type reserved struct {
	mu    sync.Mutex
	ports []uint16         // ports this process listens on, at any local address
	exact []netip.AddrPort // the database's addresses
}

// listening adds a listener: its port is reserved at every address of this
// host (a listener on 0.0.0.0 answers on all of them).
func (r *reserved) listening(addr net.Addr) {
	ap, err := netip.ParseAddrPort(addr.String())
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !slices.Contains(r.ports, ap.Port()) {
		r.ports = append(r.ports, ap.Port())
	}
}

// contains reports whether ap is one of this server's addresses.
func (r *reserved) contains(ap netip.AddrPort) bool {
	r.mu.Lock()
	exact, ports := slices.Clone(r.exact), slices.Clone(r.ports)
	r.mu.Unlock()
	ip := ap.Addr().Unmap()
	if slices.Contains(exact, netip.AddrPortFrom(ip, ap.Port())) {
		return true
	}
	return slices.Contains(ports, ap.Port()) && localAddr(ip)
}

// localAddr reports whether ip is an address of this host.
func localAddr(ip netip.Addr) bool {
	if ip.IsLoopback() || ip.IsUnspecified() {
		return true
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return true // unknown: treat as local, so the listener stays out of reach
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Unmap() == ip {
			return true
		}
	}
	return false
}

// database reserves the PostgreSQL server's addresses (SQLite is a file).
// A host name is resolved once, at start.
func (r *reserved) database(ctx context.Context, driver, dsn string) error {
	if driver != "postgres" {
		return nil
	}
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return fmt.Errorf("database address: %w", err)
	}
	hosts := []*pgconn.FallbackConfig{{Host: cfg.Host, Port: cfg.Port}}
	hosts = append(hosts, cfg.Fallbacks...)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for _, h := range hosts {
		if h.Host == "" || h.Host[0] == '/' {
			continue // a UNIX socket: no HTTP reaches it
		}
		ips := []netip.Addr{}
		if ip, err := netip.ParseAddr(h.Host); err == nil {
			ips = append(ips, ip)
		} else if ips, err = net.DefaultResolver.LookupNetIP(ctx, "ip", h.Host); err != nil {
			return fmt.Errorf("database address %s: %w", h.Host, err)
		}
		r.mu.Lock()
		for _, ip := range ips {
			r.exact = append(r.exact, netip.AddrPortFrom(ip.Unmap(), h.Port))
		}
		r.mu.Unlock()
	}
	return nil
}

// fetchHosts is web_fetch's allow-list: the configuration's, then those
// added in Settings.
func (a *App) fetchHosts(ctx context.Context) ([]string, error) {
	stored, err := a.Settings.FetchHosts(ctx)
	if err != nil {
		return nil, err
	}
	return append(slices.Clone(a.Config.FetchHosts), stored...), nil
}

// webFetchOptions checks the configured allow-list and builds web_fetch's
// options.
func (a *App) webFetchOptions(ctx context.Context) (builtin.WebFetchOptions, error) {
	for _, h := range a.Config.FetchHosts {
		if _, err := egress.ParseHost(h); err != nil {
			return builtin.WebFetchOptions{}, fmt.Errorf("HARNESS_FETCH_HOSTS: %w", err)
		}
	}
	if err := a.reserved.database(ctx, a.Config.DBDriver, a.Config.DBDSN); err != nil {
		// Not fatal: the database is then reachable only if an admin
		// allow-lists its private address, which the log says.
		a.Log.Warn("web_fetch cannot reserve the database's address", "err", err)
	}
	return builtin.WebFetchOptions{Hosts: a.Workspaces.AllFetchHosts, Reserved: a.reserved.contains}, nil
}
