package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"

	"harness/internal/auth"
	"harness/internal/config"
	"harness/internal/models"
)

// startAuth builds the account service for the server and runs the start
// checks, in order: with no users, create the first admin from
// HARNESS_ADMIN_PASSWORD or log a one-time setup link; then refuse a
// non-loopback bind unless a user with a password exists.
func startAuth(ctx context.Context, log *slog.Logger, cfg config.Config, db *models.DB) (*auth.Service, error) {
	svc := auth.NewService(log, models.NewAuthStore(db), auth.Options{})
	path, err := svc.Bootstrap(ctx, cfg.AdminPassword)
	if err != nil {
		return nil, err
	}
	if path != "" {
		// The link is a one-time secret meant for whoever reads this log.
		log.Warn("no users yet: open this one-time link to create the first admin, or set HARNESS_ADMIN_PASSWORD",
			"url", setupURL(cfg.Addr, path))
	}
	if err := svc.CheckExposure(ctx, cfg.Loopback()); err != nil {
		return nil, fmt.Errorf("listen on %s: %w; create one with `user add NAME --admin` or set HARNESS_ADMIN_PASSWORD, or bind 127.0.0.1", cfg.Addr, err)
	}
	return svc, nil
}

// setupURL is the setup link as a browser on this machine opens it.
func setupURL(addr, path string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return path
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + path
}
