// Package templates holds the server-rendered templ components. The
// generated *_templ.go files are committed; regenerate them with
// `templ generate` (see Taskfile.yml).
package templates

// LoginView fills the login page.
type LoginView struct {
	Name  string // the name typed last time, kept on failure
	Next  string // where to go after login (a local path)
	CSRF  string // the pre-login CSRF token (double-submit cookie)
	Error string // a generic, safe message
	// Notice is a message a redirect asked for (a known flash key).
	Notice string
	// Setup: no account exists yet; the page says how to make the first.
	Setup bool
}

// SetupView fills the first-admin setup page.
type SetupView struct {
	Token string // the setup token from the link
	Name  string
	CSRF  string
	Error string
}

// ErrorView fills the error page.
type ErrorView struct {
	Status  int
	Title   string
	Message string
}

// HomeView fills the placeholder home page.
type HomeView struct {
	Name        string
	DisplayName string
	Admin       bool
	CSRF        string
}

// ShareView fills the placeholder share-link page.
type ShareView struct {
	SessionID string
}
