package web

// pageRoutes registers the browser pages. "/" and "/s/:token" replace the
// account placeholders registered by authRoutes (echo keeps the last
// handler of a route).
func (s *Server) pageRoutes() {
	s.e.Use(securityHeaders)
	u, admin := s.RequireUser, s.RequireAdmin

	s.e.GET("/", s.pageSessions, u)
	s.e.POST("/sessions", s.pageCreateSession, u)
	s.importPageRoutes(u)
	// The chat page shows the live state: the owner's (forward.go).
	s.e.GET("/sessions/:id", s.pageChat, u, s.toOwner)
	s.e.GET("/sessions/:id/history", s.pageHistory, u)
	s.e.POST("/sessions/:id/messages", s.pageSendMessage, u)
	s.e.POST("/sessions/:id/rename", s.pageRename, u)
	s.e.POST("/sessions/:id/archive", s.pageArchive, u)
	s.e.POST("/sessions/:id/fork", s.pageFork, u)
	s.e.GET("/sessions/:id/delete", s.pageDeleteConfirm, u)
	s.e.POST("/sessions/:id/delete", s.pageDelete, u)
	s.e.GET("/sessions/:id/export", s.pageExport, u)
	s.e.GET("/sessions/:id/files/tree", s.pageFileTree, u)
	s.e.GET("/sessions/:id/files/view", s.pageFileView, u)
	s.e.GET("/sessions/:id/files/download", s.downloadFile, u)

	s.e.GET("/sessions/:id/sharing", s.pageSharing, u)
	s.e.POST("/sessions/:id/members", s.pageAddMember, u)
	s.e.POST("/sessions/:id/members/:name/remove", s.pageRemoveMember, u)
	s.e.POST("/sessions/:id/links", s.pageCreateLink, u)
	s.e.POST("/sessions/:id/links/:link/revoke", s.pageRevokeLink, u)

	s.e.GET("/s/:token", s.pageShare, s.toOwner)
	s.e.GET("/s/:token/history", s.pageShareHistory)
	s.e.GET("/s/:token/events", s.pageShareEvents, s.toOwner)

	s.e.GET("/settings", s.pageSettings, u)
	s.e.POST("/settings/prefs", s.pageSavePrefs, u)
	s.e.POST("/settings/default", s.pageSaveDefault, admin)
	s.e.POST("/settings/providers", s.pageSaveProvider, admin)
	s.e.POST("/settings/providers/:name/delete", s.pageDeleteProvider, admin)
	s.e.POST("/settings/providers/:name/test", s.pageTestProvider, admin)
	s.e.POST("/settings/roots", s.pageAddRoot, admin)
	s.e.POST("/settings/roots/delete", s.pageRemoveRoot, admin)
	s.e.POST("/settings/git-hosts", s.pageSaveGitHosts, admin)
	s.e.POST("/settings/fetch-hosts", s.pageSaveFetchHosts, admin)
	s.e.POST("/settings/network", s.pageSaveRouteNetwork, admin)
	s.e.POST("/settings/mcp", s.pageSaveMCP, admin)
	s.e.POST("/settings/mcp/:name/delete", s.pageDeleteMCP, admin)
	s.e.POST("/sessions/:id/network", s.pageSetNetwork, admin)

	s.e.GET("/admin/users", s.pageAdminUsers, admin)
	s.e.POST("/admin/users", s.pageCreateUser, admin)
	s.e.POST("/admin/users/:name/role", s.pageSetRole, admin)
	s.e.POST("/admin/users/:name/disabled", s.pageSetDisabled, admin)
	s.e.POST("/admin/users/:name/password", s.pageSetPassword, admin)
}
