package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"harness/internal/service"
	"harness/internal/session"
)

// POST /api/sessions/:id/messages {content, mode?: followup|steer, clientId?}
// → 202 {id}: the message is durable and queued.
func (s *Server) apiSendMessage(c echo.Context) error {
	var m service.Message
	if err := bindJSON(c, &m, false); err != nil {
		return err
	}
	id, err := s.svc.SendMessage(c.Request().Context(), ActorFrom(c), c.Param("id"), m)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusAccepted, map[string]string{"id": id})
}

// POST /api/sessions/:id/cancel {keepInbox?} → 204.
func (s *Server) apiCancel(c echo.Context) error {
	var req struct {
		KeepInbox bool `json:"keepInbox"`
	}
	if err := bindJSON(c, &req, true); err != nil {
		return err
	}
	if err := s.svc.Cancel(c.Request().Context(), ActorFrom(c), c.Param("id"), req.KeepInbox); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// POST /api/sessions/:id/approvals/:aid {decision: allow|allow-session|deny}
// → 204.
func (s *Server) apiApprove(c echo.Context) error {
	var req struct {
		Decision service.Decision `json:"decision"`
	}
	if err := bindJSON(c, &req, false); err != nil {
		return err
	}
	if err := s.svc.Approve(c.Request().Context(), ActorFrom(c), c.Param("id"), c.Param("aid"), req.Decision); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// DELETE /api/sessions/:id/approvals/tools/:tool → 204: calls of the tool
// need approval again (a tool that is not allowed: 204, nothing changes).
func (s *Server) apiRevokeTool(c echo.Context) error {
	if err := s.svc.RevokeTool(c.Request().Context(), ActorFrom(c), c.Param("id"), c.Param("tool")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// POST /api/sessions/:id/questions/:qid {answers: [{id, selected, custom?}]} → 204.
func (s *Server) apiAnswer(c echo.Context) error {
	var req struct {
		Answers []session.Answer `json:"answers"`
	}
	if err := bindJSON(c, &req, false); err != nil {
		return err
	}
	if err := s.svc.Answer(c.Request().Context(), ActorFrom(c), c.Param("id"), c.Param("qid"), req.Answers); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// PATCH /api/sessions/:id/queue/:item {content} → 204.
func (s *Server) apiEditQueueItem(c echo.Context) error {
	var req struct {
		Content string `json:"content"`
	}
	if err := bindJSON(c, &req, false); err != nil {
		return err
	}
	if err := s.svc.EditQueueItem(c.Request().Context(), ActorFrom(c), c.Param("id"), c.Param("item"), req.Content); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// DELETE /api/sessions/:id/queue/:item → 204.
func (s *Server) apiRemoveQueueItem(c echo.Context) error {
	if err := s.svc.RemoveQueueItem(c.Request().Context(), ActorFrom(c), c.Param("id"), c.Param("item")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// POST /api/sessions/:id/queue/run → 204: the paused queue runs.
func (s *Server) apiRunQueue(c echo.Context) error {
	if err := s.svc.RunQueue(c.Request().Context(), ActorFrom(c), c.Param("id")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// DELETE /api/sessions/:id/queue → 204: every queued message is removed.
func (s *Server) apiClearQueue(c echo.Context) error {
	if err := s.svc.ClearQueue(c.Request().Context(), ActorFrom(c), c.Param("id")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// POST /api/sessions/:id/queue/:item/steer → 204.
func (s *Server) apiSteerQueueItem(c echo.Context) error {
	if err := s.svc.SteerQueueItem(c.Request().Context(), ActorFrom(c), c.Param("id"), c.Param("item")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
