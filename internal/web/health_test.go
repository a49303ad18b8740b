package web

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
)

type pingFunc func(context.Context) error

func (f pingFunc) Ping(ctx context.Context) error { return f(ctx) }

func TestHealthAndReadiness(t *testing.T) {
	t.Parallel()
	down := errors.New("connection refused")
	tests := []struct {
		name     string
		path     string
		ping     error
		wantCode int
		wantBody string
	}{
		{"healthz", "/healthz", nil, 200, "ok"},
		{"healthz ignores the database", "/healthz", down, 200, "ok"},
		{"ready", "/readyz", nil, 200, "ready"},
		{"not ready", "/readyz", down, 503, "database unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := New(Deps{Log: slog.New(slog.DiscardHandler), DB: pingFunc(func(context.Context) error { return tt.ping })})
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
