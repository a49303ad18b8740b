package web

import (
	"net/http"
	"net/url"
	"testing"
)

// accountRows are the scenario rows of the routes that exist with the
// account system: health, static files, login, logout, setup, the
// placeholder start page, share links and /api/me.
var accountRows = []scenarioRow{
	{Name: "GET /healthz", Method: http.MethodGet, Path: "/healthz", Want: expect(200)},
	{Name: "GET /readyz", Method: http.MethodGet, Path: "/readyz", Want: expect(200)},
	{Name: "GET /static/app.css", Method: http.MethodGet, Path: "/static/app.css", Want: expect(200)},
	{Name: "GET /no-such-page", Method: http.MethodGet, Path: "/no-such-page", Want: expect(404)},

	// Signed-in users are sent on; everyone else gets the form.
	{Name: "GET /login", Method: http.MethodGet, Path: "/login", Want: expect(200, only(303, userActors...))},
	{
		Name: "POST /login wrong password", Method: http.MethodPost, Path: "/login", PreLogin: true,
		Body: func(a scenarioActor) url.Values {
			return url.Values{"name": {"nobody-" + string(a)}, "password": {"wrong-password"}}
		},
		Want: expect(401),
	},
	{
		Name: "POST /login without the form token", Method: http.MethodPost, Path: "/login",
		PreLogin: true, NoCSRF: true,
		Form: url.Values{"name": {"owner"}, "password": {password(actorOwner)}},
		Want: expect(403),
	},
	{Name: "POST /logout", Method: http.MethodPost, Path: "/logout", Mutates: true, Want: expect(303)},
	{
		Name: "POST /logout without CSRF", Method: http.MethodPost, Path: "/logout", NoCSRF: true,
		Want: expect(303, only(403, userActors...)),
	},

	{Name: "GET / (start page)", Method: http.MethodGet, Path: "/", Want: expect(303, only(200, userActors...))},
	{Name: "GET /api/me with cookie", Method: http.MethodGet, Path: "/api/me", Want: expect(401, only(200, userActors...))},
	{Name: "GET /api/me with token", Method: http.MethodGet, Path: "/api/me", Auth: viaBearer, Want: expect(401, only(200, userActors...))},
	{Name: "GET /s/{share}", Method: http.MethodGet, Path: "/s/{share}", Want: expect(404, only(200, actorShare))},
	// Users exist, so no setup link works: it sends to the login page,
	// which says setup is done (setup_test.go).
	{Name: "GET /setup/{setup}", Method: http.MethodGet, Path: "/setup/{setup}", Want: expect(303)},
	{
		Name: "POST /setup/{setup}", Method: http.MethodPost, Path: "/setup/{setup}", PreLogin: true,
		Form: url.Values{"name": {"eve"}, "password": {"eve-password"}, "confirm": {"eve-password"}},
		Want: expect(303),
	},
}

func TestAccountRouteScenarios(t *testing.T) {
	t.Parallel()
	env := newScenarioEnv(t, scenarioOptions{})
	runScenarios(t, env, accountRows)
}
