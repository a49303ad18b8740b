package web

import (
	"bytes"
	"context"
	"io"
	"maps"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"

	"github.com/labstack/echo/v4"

	"harness/internal/metrics"
	"harness/internal/service"
)

// readForwardWait is how long a read forwarded to the owner waits for the
// owner's answer to start: an owner that hangs (paused, overloaded) lets
// this replica answer from the stored log instead.
const readForwardWait = 3 * time.Second

// readTransport carries forwarded reads: the default transport's settings,
// with readForwardWait.
func readTransport() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ResponseHeaderTimeout = readForwardWait
	return t
}

// ForwardCounter counts the requests forwarded to a session's owner, by
// kind (metrics.ForwardCommand, metrics.ForwardRead) and outcome
// (metrics.ForwardOK: the owner answered, whatever its status;
// metrics.ForwardFailed).
type ForwardCounter interface {
	Forwarded(kind, outcome string)
}

// headerForwarded marks a request one replica forwarded to another: the
// receiver never forwards it again.
const headerForwarded = "X-Harness-Forwarded-By"

// toOwner forwards a REST command, or a read (a session, its events, its
// page), for a session another replica owns to that replica (PostgreSQL
// replicas, docs/deploy.md) and relays its answer. The handler runs here
// first: only its not-owner refusal, which has done nothing, sends the
// request on, with the client's own credentials and Host, so the owner
// authenticates and authorizes it as if the client had called it. A read
// that was forwarded here, or whose forward failed (the owner died and its
// lease has not lapsed yet, or it did not answer within readForwardWait),
// is answered here from what this replica has (service.ReadHere). A
// command whose forward failed waits for the session to move (takeover).
// Without replicas it only passes through.
func (s *Server) toOwner(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.replicaID == "" {
			return next(c)
		}
		req := c.Request()
		read := req.Method == http.MethodGet || req.Method == http.MethodHead
		if read && req.Header.Get(headerForwarded) != "" {
			c.SetRequest(req.WithContext(service.ReadHere(req.Context())))
			return next(c)
		}
		body, err := io.ReadAll(req.Body) // limitBodies bounds it
		if err != nil {
			return service.Errorf(service.CodeTooLarge, "request body too large")
		}
		deadline := time.Now().Add(s.takeoverWait)
		for {
			req.Body = io.NopCloser(bytes.NewReader(body))
			err = next(c)
			id, addr, ok := service.Owner(err)
			if !ok || req.Header.Get(headerForwarded) != "" || c.Response().Committed {
				return err
			}
			if s.forward(c, req, body, id, addr, read) {
				return nil
			}
			if read {
				c.SetRequest(req.WithContext(service.ReadHere(req.Context())))
				return next(c)
			}
			// A command waits for the session to move (its owner died and
			// another replica, or this one, takes its lease): it runs
			// again, here or on the new owner, up to TakeoverWait.
			if !time.Now().Before(deadline) || !sleepCtx(req.Context(), takeoverPoll) {
				return service.Moving(err)
			}
		}
	}
}

// takeoverPoll is how often a command waiting for a takeover tries again.
const takeoverPoll = 100 * time.Millisecond

// forward relays the request to the owner at addr; false when the owner
// gave no answer (nothing was written to the client).
func (s *Server) forward(c echo.Context, req *http.Request, body []byte, id, addr string, read bool) bool {
	ctx := req.Context()
	if s.whileOwner != nil {
		var cancel context.CancelFunc
		ctx, cancel = s.whileOwner(ctx, id, addr)
		defer cancel()
	}
	out := req.Clone(ctx)
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.ContentLength = int64(len(body))
	out.Header.Set(headerForwarded, s.replicaID)
	var failed bool
	var transport http.RoundTripper // commands: the default, no deadline
	if read {
		transport = s.readOwner
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(&url.URL{Scheme: "http", Host: addr})
			pr.Out.Host = pr.In.Host // the owner checks Origin against it
		},
		Transport: transport,
		// Called before anything is written: the client then gets this
		// replica's answer.
		ErrorHandler: func(_ http.ResponseWriter, r *http.Request, perr error) {
			s.log.Warn("forward a request to the session's owner", "path", r.URL.Path, "owner", addr, "err", perr)
			failed = true
		},
	}
	// The owner's answer brings its own headers (the pages' security
	// headers among them): this replica's are not sent twice.
	h := c.Response().Header()
	mine := h.Clone()
	clear(h)
	proxy.ServeHTTP(c.Response(), out)
	s.countForward(read, failed)
	if failed {
		maps.Copy(h, mine)
	}
	return !failed
}

// sleepCtx waits d; false when ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (s *Server) countForward(read, failed bool) {
	if s.forwards == nil {
		return
	}
	kind, outcome := metrics.ForwardCommand, metrics.ForwardOK
	if read {
		kind = metrics.ForwardRead
	}
	if failed {
		outcome = metrics.ForwardFailed
	}
	s.forwards.Forwarded(kind, outcome)
}
