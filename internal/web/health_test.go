package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"

	"github.com/mattn/go-sqlite3"
)

// dbState answers readiness with fixed errors.
type dbState struct{ ping, write error }

func (d dbState) Ping(context.Context) error     { return d.ping }
func (d dbState) Writable(context.Context) error { return d.write }

func TestHealthAndReadiness(t *testing.T) {
	t.Parallel()
	down := errors.New("connection refused")
	tests := []struct {
		name     string
		path     string
		ping     error
		write    error
		draining bool
		wantCode int
		wantBody string
	}{
		{"healthz", "/healthz", nil, nil, false, 200, "ok"},
		{"healthz ignores the database", "/healthz", down, nil, false, 200, "ok"},
		{"ready", "/readyz", nil, nil, false, 200, "ready"},
		{"not ready", "/readyz", down, nil, false, 503, "database unavailable"},
		{"writes fail", "/readyz", nil, errors.New("attempt to write a readonly database"), false, 503, "database does not take writes"},
		{"disk full", "/readyz", nil, fmt.Errorf("commit: %w", syscall.ENOSPC), false, 503, "database does not take writes: disk full"},
		{"draining", "/readyz", nil, nil, true, 503, "draining"},
		{"healthz while draining", "/healthz", nil, nil, true, 200, "ok"},
		{"write-locked", "/readyz", nil, fmt.Errorf("begin: %w", sqlite3.Error{Code: sqlite3.ErrBusy}), false, 503, "database does not take writes: locked by another process"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := New(Deps{Log: slog.New(slog.DiscardHandler), DB: dbState{tt.ping, tt.write}, Draining: func() bool { return tt.draining }})
			srv := httptest.NewServer(s.Handler())
			defer srv.Close()
			res, err := http.Get(srv.URL + tt.path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != tt.wantCode || string(body) != tt.wantBody {
				t.Fatalf("got %d %q, want %d %q", res.StatusCode, body, tt.wantCode, tt.wantBody)
			}
		})
	}
}

// writable is a database whose writes are not in question in a test.
type writable struct {
	pinger interface{ Ping(context.Context) error }
}

func (w writable) Ping(ctx context.Context) error { return w.pinger.Ping(ctx) }
func (writable) Writable(context.Context) error   { return nil }
