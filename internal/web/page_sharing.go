package web

import (
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"harness/internal/auth"
	"harness/internal/service"
	"harness/web/templates"
)

// GET /sessions/:id/sharing — members and read-only links, and the link
// just created (once).
func (s *Server) pageSharing(c echo.Context) error {
	return s.renderSharing(c, s.takeNewLink(c), "")
}

// newLinkCookie carries a share link just created from the POST to the
// page it redirects to, which shows it once: a reload of that page must
// not create another link, and the token must not travel in a URL. It
// holds "<session id>.<token>", lives a minute, and the page clears it.
const newLinkCookie = "harness_new_link"

// takeNewLink returns the full URL of the link created for this page's
// session, if one waits, and clears it.
func (s *Server) takeNewLink(c echo.Context) string {
	ck, err := c.Cookie(newLinkCookie)
	if err != nil {
		return ""
	}
	setCookie(c, &http.Cookie{Name: newLinkCookie, Value: "", MaxAge: -1})
	id, token, ok := strings.Cut(ck.Value, ".")
	if !ok || id != c.Param("id") || token == "" {
		return ""
	}
	// The page holds the token: no cache keeps it.
	c.Response().Header().Set("Cache-Control", "no-store")
	r := c.Request()
	scheme := "http"
	if isHTTPS(r) {
		scheme = "https"
	}
	return scheme + "://" + r.Host + "/s/" + token
}

func (s *Server) renderSharing(c echo.Context, newLink, errMsg string) error {
	ctx := c.Request().Context()
	a := ActorFrom(c)
	id := c.Param("id")
	sh, err := s.svc.Sharing(ctx, a, id)
	if err != nil {
		return s.pageError(c, err)
	}
	v := templates.SharingView{Nav: *s.nav(c, "chat", id), ID: id, Title: sh.Row.Title, NewLink: newLink, Error: errMsg}
	for _, m := range sh.Members {
		v.Members = append(v.Members, templates.MemberView{Name: m.Name, Role: string(m.Role)})
	}
	now := time.Now()
	for _, l := range sh.Links {
		state := "active"
		switch {
		case l.RevokedAt != nil:
			state = "revoked"
		case l.ExpiresAt != nil && !now.Before(*l.ExpiresAt):
			state = "expired"
		}
		v.Links = append(v.Links, templates.LinkView{ID: l.ID, Created: l.CreatedAt, State: state})
	}
	status := http.StatusOK
	if errMsg != "" {
		status = http.StatusBadRequest
	}
	return renderComponent(c, status, templates.SharingPage(v))
}

// POST /sessions/:id/members {name, role}
func (s *Server) pageAddMember(c echo.Context) error {
	id := c.Param("id")
	role := auth.SessionRole(c.FormValue("role"))
	err := s.svc.AddMember(c.Request().Context(), ActorFrom(c), id, auth.NormalizeName(c.FormValue("name")), role)
	if err != nil {
		// A not-found is about the user named or the session: the page,
		// which authorizes, shows the former and refuses the latter.
		if e := service.AsError(err); e.Code == service.CodeBadRequest || e.Code == service.CodeNotFound {
			msg := sentence(e.Message)
			if e.Code == service.CodeNotFound {
				msg = "There is no user with that name."
			}
			return s.renderSharing(c, "", msg)
		}
		return s.pageError(c, err)
	}
	return redirect(c, "/sessions/"+id+"/sharing")
}

// POST /sessions/:id/members/:name/remove
func (s *Server) pageRemoveMember(c echo.Context) error {
	id := c.Param("id")
	if err := s.svc.RemoveMember(c.Request().Context(), ActorFrom(c), id, c.Param("name")); err != nil {
		return s.pageError(c, err)
	}
	return redirect(c, "/sessions/"+id+"/sharing")
}

// POST /sessions/:id/links — creates a link, then redirects to the
// sharing page, which shows it once (newLinkCookie).
func (s *Server) pageCreateLink(c echo.Context) error {
	id := c.Param("id")
	l, err := s.svc.CreateShareLink(c.Request().Context(), ActorFrom(c), id, nil)
	if err != nil {
		return s.pageError(c, err)
	}
	setCookie(c, &http.Cookie{Name: newLinkCookie, Value: id + "." + l.Token, MaxAge: 60})
	return redirect(c, "/sessions/"+id+"/sharing")
}

// POST /sessions/:id/links/:link/revoke
func (s *Server) pageRevokeLink(c echo.Context) error {
	id := c.Param("id")
	if err := s.svc.RevokeShareLink(c.Request().Context(), ActorFrom(c), id, c.Param("link")); err != nil {
		return s.pageError(c, err)
	}
	return redirect(c, "/sessions/"+id+"/sharing")
}
