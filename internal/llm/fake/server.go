package fake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// Server is a scripted OpenAI-compatible chat completions server. It is an
// http.Handler serving POST /v1/chat/completions and /chat/completions
// (server-sent events) and GET /v1/models and /models. It records every
// chat request. It is safe for concurrent use.
type Server struct {
	mu      sync.Mutex
	script  Script
	next    int
	records []Recorded
	// forget keeps no records (WithoutRecords); count numbers requests.
	forget  bool
	count   int
	changed chan struct{} // closed and replaced on every new record

	models     []string
	timeScale  float64
	chunkDelay time.Duration
	log        *slog.Logger
	onListen   func(net.Addr)

	done      chan struct{} // closed by Close: ends stalls
	closeOnce sync.Once
	hs        *http.Server
}

// Option configures a Server.
type Option func(*Server)

// WithModels sets the ids listed by GET /models.
func WithModels(ids ...string) Option {
	return func(s *Server) { s.models = append([]string(nil), ids...) }
}

// WithTimeScale multiplies every pacing delay of every reply (not stalls);
// 0 streams without pauses.
func WithTimeScale(f float64) Option {
	return func(s *Server) { s.timeScale = max(0, f) }
}

// WithChunkDelay sets the demo model's pause between deltas (default 4 ms).
func WithChunkDelay(d time.Duration) Option {
	return func(s *Server) { s.chunkDelay = max(0, d) }
}

// OnListen tells fn the address Listen serves on (the app reserves it: no
// tool connection may reach the server's own listeners).
func OnListen(fn func(net.Addr)) Option {
	return func(s *Server) { s.onListen = fn }
}

// WithoutRecords keeps no record of the requests (Requests stays empty):
// the in-process demo model serves a whole server's life, and each request
// holds a session's history (and its images' bytes).
func WithoutRecords() Option {
	return func(s *Server) { s.forget = true }
}

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option {
	return func(s *Server) {
		if l != nil {
			s.log = l
		}
	}
}

// NewServer returns a server answering with script.
func NewServer(script Script, opts ...Option) *Server {
	s := &Server{
		script:     script,
		changed:    make(chan struct{}),
		models:     []string{"fake-model"},
		timeScale:  1,
		chunkDelay: 4 * time.Millisecond,
		log:        slog.New(slog.DiscardHandler),
		done:       make(chan struct{}),
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Start serves s on a loopback httptest server for the duration of the test
// and returns its base URL (no trailing slash; both /v1 and the bare paths
// work).
func (s *Server) Start(t testing.TB) string {
	t.Helper()
	hs := httptest.NewServer(s)
	t.Cleanup(func() {
		s.shutdown()
		hs.Close()
	})
	return hs.URL
}

// Listen serves s on addr ("127.0.0.1:0" picks a free port) in the
// background and returns the base URL. Close stops it.
func (s *Server) Listen(addr string) (string, error) {
	return s.listen(context.Background(), addr)
}

func (s *Server) listen(ctx context.Context, addr string) (string, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return "", fmt.Errorf("fake server listen %s: %w", addr, err)
	}
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	s.mu.Lock()
	if s.hs != nil {
		s.mu.Unlock()
		_ = ln.Close()
		return "", errors.New("fake server: already listening")
	}
	s.hs = hs
	s.mu.Unlock()
	if s.onListen != nil {
		s.onListen(ln.Addr())
	}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("fake server stopped", "err", err)
		}
	}()
	return "http://" + ln.Addr().String(), nil
}

// Close ends stalled streams and stops a server started with Listen.
func (s *Server) Close() error {
	s.shutdown()
	s.mu.Lock()
	hs := s.hs
	s.mu.Unlock()
	if hs == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(ctx); err != nil {
		return errors.Join(fmt.Errorf("fake server shutdown: %w", err), hs.Close())
	}
	return nil
}

func (s *Server) shutdown() { s.closeOnce.Do(func() { close(s.done) }) }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/v1/chat/completions", "/chat/completions":
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeError(w, http.StatusMethodNotAllowed, "use POST", "invalid_request_error")
			return
		}
		s.chat(w, r)
	case "/v1/models", "/models":
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			writeError(w, http.StatusMethodNotAllowed, "use GET", "invalid_request_error")
			return
		}
		s.listModels(w)
	default:
		writeError(w, http.StatusNotFound, "no route "+r.URL.Path, "invalid_request_error")
	}
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "read body: "+err.Error(), "invalid_request_error")
		return
	}
	rec := s.record(r, raw)
	reply, ok := s.reply(rec)
	if !ok {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("fake script exhausted: no reply for request %d", rec.Index), "invalid_request_error")
		return
	}
	s.log.Debug("fake reply", "request", rec.Index, "name", reply.Name)
	s.stream(w, r, rec, reply)
}

// reply picks the next scripted reply, else asks the responder.
func (s *Server) reply(rec Recorded) (Reply, bool) {
	s.mu.Lock()
	if s.next < len(s.script.Replies) {
		r := s.script.Replies[s.next]
		s.next++
		s.mu.Unlock()
		return r, true
	}
	responder := s.script.Responder
	s.mu.Unlock()
	if responder == nil {
		return Reply{}, false
	}
	return responder(rec), true
}

func (s *Server) listModels(w http.ResponseWriter) {
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	out := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list", Data: []model{}}
	for _, id := range s.models {
		out.Data = append(out.Data, model{ID: id, Object: "model", OwnedBy: "harness-fake"})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// writeError writes an OpenAI-style error body.
func writeError(w http.ResponseWriter, status int, message, typ string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(errorBody(message, typ, ""))
}

func errorBody(message, typ, code string) any {
	type apiError struct {
		Message string `json:"message"`
		Type    string `json:"type,omitempty"`
		Code    string `json:"code,omitempty"`
	}
	return struct {
		Error apiError `json:"error"`
	}{apiError{message, typ, code}}
}
