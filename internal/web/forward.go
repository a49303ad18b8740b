package web

import (
	"bytes"
	"io"
	"maps"
	"net/http"
	"net/http/httputil"
	"net/url"

	"github.com/labstack/echo/v4"

	"harness/internal/service"
)

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
// lease has not lapsed yet), is answered here from what this replica has
// (service.ReadHere). Without replicas it only passes through.
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
		req.Body = io.NopCloser(bytes.NewReader(body))
		err = next(c)
		addr, ok := service.OwnerAddr(err)
		if !ok || req.Header.Get(headerForwarded) != "" || c.Response().Committed {
			return err
		}
		out := req.Clone(req.Context())
		out.Body = io.NopCloser(bytes.NewReader(body))
		out.ContentLength = int64(len(body))
		out.Header.Set(headerForwarded, s.replicaID)
		var failed bool
		proxy := &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.SetURL(&url.URL{Scheme: "http", Host: addr})
				pr.Out.Host = pr.In.Host // the owner checks Origin against it
			},
			// Called before anything is written: the client then gets
			// this replica's unavailable answer.
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
		if failed {
			maps.Copy(h, mine)
		}
		if failed && read {
			c.SetRequest(req.WithContext(service.ReadHere(req.Context())))
			return next(c)
		}
		if failed {
			return err
		}
		return nil
	}
}
