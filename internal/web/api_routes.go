package web

import (
	"github.com/labstack/echo/v4"
)

// apiRoutes registers the session REST API and the WebSocket. Every route
// needs a user (cookie + CSRF on unsafe methods, or a bearer token); the
// WebSocket also admits share-link viewers and checks the Origin.
func (s *Server) apiRoutes() {
	if s.ws != nil {
		s.e.GET("/ws", echo.WrapHandler(s.ws), s.RequireActor, s.RequireSameOrigin)
	}
	if s.svc == nil {
		return
	}
	// Middleware per route rather than a group: a group would also claim
	// every unknown /api path. Bodies are capped before routing
	// (bodylimit.go).
	g := apiGroup{e: s.e, mw: []echo.MiddlewareFunc{s.RequireUser}}
	// Commands, and the reads of a session's live state, run on the
	// session's owner: forwarded there when another replica owns it
	// (forward.go).
	cmd := apiGroup{e: s.e, mw: []echo.MiddlewareFunc{s.RequireUser, s.toOwner}}
	g.GET("/providers", s.apiProviders)
	g.GET("/sandbox", s.apiSandbox)
	g.GET("/workspace/roots", s.apiWorkspaceRoots)
	g.GET("/workspace/browse", s.apiWorkspaceBrowse)

	g.POST("/sessions", s.apiCreateSession)
	s.e.POST("/api/sessions/import", s.apiImport, s.RequireUser)
	g.GET("/sessions", s.apiListSessions)
	cmd.GET("/sessions/:id", s.apiGetSession)
	cmd.PATCH("/sessions/:id", s.apiPatchSession)
	g.DELETE("/sessions/:id", s.apiDeleteSession)
	cmd.GET("/sessions/:id/events", s.apiEvents)
	g.GET("/sessions/:id/export", s.apiExport)
	g.GET("/sessions/:id/files", s.apiListFiles)
	g.GET("/sessions/:id/files/content", s.apiFileContent)
	g.GET("/sessions/:id/files/download", s.downloadFile)
	g.POST("/sessions/:id/fork", s.apiFork)
	// Images: the body cap is the image cap's (bodyCap); any replica
	// stores them.
	s.e.POST("/api/sessions/:id/attachments", s.apiUploadAttachment, s.RequireUser)
	g.GET("/sessions/:id/attachments/:aid", s.getAttachment)
	// The transcript's <img> routes: a signed-in reader's, a share link's.
	s.e.GET("/sessions/:id/attachments/:aid", s.getAttachment, s.RequireUser)
	s.e.GET("/s/:token/attachments/:aid", s.shareAttachment)

	cmd.POST("/sessions/:id/messages", s.apiSendMessage)
	cmd.POST("/sessions/:id/cancel", s.apiCancel)
	cmd.POST("/sessions/:id/compact", s.apiCompact)
	cmd.POST("/sessions/:id/approvals/:aid", s.apiApprove)
	cmd.DELETE("/sessions/:id/approvals/tools/:tool", s.apiRevokeTool)
	cmd.POST("/sessions/:id/questions/:qid", s.apiAnswer)
	cmd.PATCH("/sessions/:id/queue/:item", s.apiEditQueueItem)
	cmd.DELETE("/sessions/:id/queue/:item", s.apiRemoveQueueItem)
	cmd.POST("/sessions/:id/queue/:item/steer", s.apiSteerQueueItem)
	cmd.POST("/sessions/:id/queue/run", s.apiRunQueue)
	cmd.DELETE("/sessions/:id/queue", s.apiClearQueue)

	g.GET("/sessions/:id/members", s.apiMembers)
	g.POST("/sessions/:id/members", s.apiAddMember)
	g.DELETE("/sessions/:id/members/:name", s.apiRemoveMember)
	g.GET("/sessions/:id/shares", s.apiShareLinks)
	g.POST("/sessions/:id/shares", s.apiCreateShareLink)
	g.DELETE("/sessions/:id/shares/:link", s.apiRevokeShareLink)
}

// apiGroup registers /api routes with shared middleware.
type apiGroup struct {
	e  *echo.Echo
	mw []echo.MiddlewareFunc
}

func (g apiGroup) GET(p string, h echo.HandlerFunc)    { g.e.GET("/api"+p, h, g.mw...) }
func (g apiGroup) POST(p string, h echo.HandlerFunc)   { g.e.POST("/api"+p, h, g.mw...) }
func (g apiGroup) PATCH(p string, h echo.HandlerFunc)  { g.e.PATCH("/api"+p, h, g.mw...) }
func (g apiGroup) DELETE(p string, h echo.HandlerFunc) { g.e.DELETE("/api"+p, h, g.mw...) }
