package web

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"harness/internal/auth"
	"harness/web/templates"
)

// GET /admin/users
func (s *Server) pageAdminUsers(c echo.Context) error {
	return s.renderAdminUsers(c, http.StatusOK, flash(c), "")
}

func (s *Server) renderAdminUsers(c echo.Context, status int, flashMsg, errMsg string) error {
	users, err := s.auth.ListUsers(c.Request().Context())
	if err != nil {
		return err
	}
	me := ActorFrom(c)
	v := templates.AdminUsersView{Nav: *s.nav(c, "admin", ""), Flash: flashMsg, Error: errMsg}
	for _, u := range users {
		v.Users = append(v.Users, templates.UserView{
			Name: u.Name, DisplayName: u.DisplayName, Role: string(u.Role), Disabled: u.Disabled,
			HasPassword: u.HasPassword, Created: u.CreatedAt, Self: u.ID == me.UserID,
		})
	}
	return renderComponent(c, status, templates.AdminUsersPage(v))
}

// adminResult answers a user-management form: back to the list with a
// message, or the list with the reason it failed.
func (s *Server) adminResult(c echo.Context, err error, done flashKey) error {
	if err == nil {
		return redirect(c, withFlash("/admin/users", done))
	}
	var in *auth.InputError
	switch {
	case errors.As(err, &in):
		return s.renderAdminUsers(c, http.StatusBadRequest, "", sentence(in.Reason))
	case errors.Is(err, auth.ErrExists):
		return s.renderAdminUsers(c, http.StatusConflict, "", "A user with that name already exists.")
	case errors.Is(err, auth.ErrLastAdmin):
		return s.renderAdminUsers(c, http.StatusConflict, "", "That would leave no enabled admin.")
	case errors.Is(err, auth.ErrNotFound):
		return s.renderAdminUsers(c, http.StatusNotFound, "", "There is no such user.")
	}
	return err
}

// POST /admin/users {name, password, admin}
func (s *Server) pageCreateUser(c echo.Context) error {
	name := auth.NormalizeName(c.FormValue("name"))
	_, err := s.auth.CreateUser(c.Request().Context(), name, c.FormValue("password"), c.FormValue("admin") == "1")
	return s.adminResult(c, err, flashUserCreated)
}

// POST /admin/users/:name/role {role}
func (s *Server) pageSetRole(c echo.Context) error {
	name := c.Param("name")
	role := auth.Role(c.FormValue("role"))
	err := s.auth.SetRole(c.Request().Context(), name, role)
	return s.adminResult(c, err, flashRoleChanged)
}

// POST /admin/users/:name/disabled {disabled=1|0}
func (s *Server) pageSetDisabled(c echo.Context) error {
	name := c.Param("name")
	disabled := c.FormValue("disabled") == "1"
	if disabled && name == ActorFrom(c).Name {
		return s.renderAdminUsers(c, http.StatusBadRequest, "", "You cannot disable yourself.")
	}
	err := s.auth.SetDisabled(c.Request().Context(), name, disabled)
	key := flashUserEnabled
	if disabled {
		key = flashUserDisabled
	}
	return s.adminResult(c, err, key)
}

// POST /admin/users/:name/password {password}
func (s *Server) pageSetPassword(c echo.Context) error {
	name := c.Param("name")
	err := s.auth.SetPassword(c.Request().Context(), name, c.FormValue("password"))
	return s.adminResult(c, err, flashPasswordReset)
}
