package web

// authRoutes installs the actor and CSRF middleware on every route and
// registers the account routes.
func (s *Server) authRoutes() {
	s.e.Use(s.resolveActor, s.csrfGuard)
	s.e.GET("/login", s.loginPage)
	s.e.POST("/login", s.loginSubmit)
	s.e.POST("/logout", s.logout)
	s.e.GET("/setup/:token", s.setupPage)
	s.e.POST("/setup/:token", s.setupSubmit)
	s.e.GET("/api/me", s.apiMe, s.RequireUser)
	if s.ui == nil {
		// A server without the UI (the account routes' own tests) still
		// has a start page and answers share links; the UI's pages
		// replace both.
		s.e.GET("/s/:token", s.sharePage)
		s.e.GET("/", s.home, s.RequireUser)
	}
}
