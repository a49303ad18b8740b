package web

// The scenario harness: every request of a table is tried by every kind of
// actor, against a real server on loopback over a real SQLite database, and
// the status code is asserted per actor. Refused requests must leave the
// store unchanged (Snapshot). Add rows for new routes to a []scenarioRow
// and call runScenarios; see TestAccountRouteScenarios for the rows of the
// account routes.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"harness/internal/auth"
	"harness/internal/auth/authtest"
	"harness/internal/models"
)

// scenarioActor names who is asking.
type scenarioActor string

const (
	actorAnonymous     scenarioActor = "anonymous"
	actorOwner         scenarioActor = "owner"
	actorCollaborator  scenarioActor = "collaborator"
	actorViewer        scenarioActor = "viewer"
	actorOther         scenarioActor = "other"
	actorAdmin         scenarioActor = "admin"
	actorShare         scenarioActor = "share"
	actorRevokedShare  scenarioActor = "revoked_share"
	actorExpiredCookie scenarioActor = "expired_cookie"
	actorBadToken      scenarioActor = "bad_token"
)

// allActors is every actor a row must give an expectation for.
var allActors = []scenarioActor{
	actorAnonymous, actorOwner, actorCollaborator, actorViewer, actorOther, actorAdmin,
	actorShare, actorRevokedShare, actorExpiredCookie, actorBadToken,
}

// userActors are the actors with a live account and credentials.
var userActors = []scenarioActor{actorOwner, actorCollaborator, actorViewer, actorOther, actorAdmin}

// authMode is how user actors present credentials in a row.
type authMode string

const (
	viaCookie authMode = "cookie" // login cookie, plus X-CSRF-Token on unsafe methods
	viaBearer authMode = "bearer" // Authorization: Bearer <API token>
)

// expect builds a complete expectation: def for every actor, then over.
func expect(def int, over ...map[scenarioActor]int) map[scenarioActor]int {
	m := make(map[scenarioActor]int, len(allActors))
	for _, a := range allActors {
		m[a] = def
	}
	for _, o := range over {
		for a, s := range o {
			m[a] = s
		}
	}
	return m
}

// only gives status to the listed actors (an override for expect).
func only(status int, actors ...scenarioActor) map[scenarioActor]int {
	m := map[scenarioActor]int{}
	for _, a := range actors {
		m[a] = status
	}
	return m
}

// scenarioRow is one request, tried by every actor.
type scenarioRow struct {
	Name   string
	Method string
	// Path may hold {session} (the scenario session, owned by owner, with
	// collaborator and viewer as members), {share} (the actor's share
	// token; a dead one for actors without) and {setup} (a setup token).
	Path string
	Auth authMode // default viaCookie
	// Form is sent urlencoded; Body, when set, builds it per actor.
	Form url.Values
	Body func(a scenarioActor) url.Values
	JSON any
	// NoCSRF leaves out the CSRF token (header, or pre-login form token).
	NoCSRF bool
	// PreLogin adds the anonymous forms' double-submit token (login, setup).
	PreLogin bool
	Want     map[scenarioActor]int
	// Mutates: accepted requests may change the store; refused ones
	// (status >= 400) are still checked against Snapshot.
	Mutates bool
	// Fresh gives each actor a new session (same owner and members) as
	// {session}, for rows that destroy it (delete).
	Fresh bool
	// Send, when set, performs the request instead of the HTTP client and
	// returns a status and body: for WebSocket commands, dial req.URL with
	// req.Header (the actor's credentials), send the command, and map the
	// outcome to a status (e.g. 101 accepted, or the coded error's status).
	Send func(t *testing.T, env *scenarioEnv, req *http.Request) (status int, body string)
}

// scenarioEnv is a running server with one session and every actor's
// credentials.
type scenarioEnv struct {
	URL       string
	Server    *Server
	DB        *models.DB
	Auth      *auth.Service
	Clock     *authtest.Clock
	Logs      *syncBuffer
	SessionID string
	Users     map[scenarioActor]auth.User
	// Snapshot returns what a refused request must not change; the default
	// covers the scenario session's events and head, members, share links,
	// users and tokens. Replace it to watch more.
	Snapshot func(t *testing.T) any

	tokens        map[scenarioActor]string
	shares        map[scenarioActor]string
	expiredCookie string
	client        *http.Client
	addr          atomic.Int64
	secrets       []string
}

// password is the test password of a user actor.
func password(a scenarioActor) string { return string(a) + "-password" }

// scenarioOptions adapt the environment to the routes under test.
type scenarioOptions struct {
	// Deps adjusts the dependencies before the server is built.
	Deps func(env *scenarioEnv, d *Deps)
	// Routes registers extra (test) routes before the server serves.
	Routes func(env *scenarioEnv, s *Server)
}

// newScenarioEnv starts the server on loopback over a fresh SQLite database.
func newScenarioEnv(t *testing.T, opts scenarioOptions) *scenarioEnv {
	t.Helper()
	ctx := t.Context()
	db := authtest.OpenSQLite(t)
	clock := authtest.NewClock()
	logs := &syncBuffer{}
	log := slogTo(logs)
	svc := authtest.NewService(t, db, clock, log)
	env := &scenarioEnv{
		DB: db, Auth: svc, Clock: clock, Logs: logs,
		Users: map[scenarioActor]auth.User{}, tokens: map[scenarioActor]string{}, shares: map[scenarioActor]string{},
		client: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
	}
	for _, a := range userActors {
		env.Users[a] = authtest.MustUser(t, svc, string(a), password(a), a == actorAdmin)
		tok, err := svc.CreateToken(ctx, string(a), "scenario")
		if err != nil {
			t.Fatal(err)
		}
		env.tokens[a] = tok
		env.secrets = append(env.secrets, tok, password(a))
	}
	env.tokens[actorBadToken] = auth.TokenPrefix + strings.Repeat("A", 43)

	// The expired cookie was issued 25 hours ago and not used since.
	cookie, _, err := svc.Login(ctx, string(actorOwner), password(actorOwner), "127.0.0.1", "scenario")
	if err != nil {
		t.Fatal(err)
	}
	env.expiredCookie = cookie
	clock.Advance(25 * time.Hour)

	env.SessionID = authtest.CreateSession(t, db, env.Users[actorOwner].ID)
	for a, role := range map[scenarioActor]auth.SessionRole{actorCollaborator: auth.SessionRoleCollaborator, actorViewer: auth.SessionRoleViewer} {
		if err := svc.AddMember(ctx, env.SessionID, string(a), role); err != nil {
			t.Fatal(err)
		}
	}
	owner := env.Users[actorOwner].ID
	if env.shares[actorShare], _, err = svc.CreateShareLink(ctx, env.SessionID, owner, nil); err != nil {
		t.Fatal(err)
	}
	revoked, id, err := svc.CreateShareLink(ctx, env.SessionID, owner, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.RevokeShareLink(ctx, env.SessionID, id); err != nil {
		t.Fatal(err)
	}
	env.shares[actorRevokedShare] = revoked
	env.secrets = append(env.secrets, cookie, env.shares[actorShare], revoked)
	env.Snapshot = env.defaultSnapshot

	// The harness stands in for a loopback reverse proxy: rows send
	// X-Forwarded-For to be distinct clients (newRequest).
	deps := Deps{Log: log, DB: writable{db}, Auth: svc, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}
	if opts.Deps != nil {
		opts.Deps(env, &deps)
	}
	env.Server = New(deps)
	if opts.Routes != nil {
		opts.Routes(env, env.Server)
	}
	srv := httptest.NewServer(env.Server.Handler())
	t.Cleanup(srv.Close)
	env.URL = srv.URL
	return env
}

// freshSession stores a new session owned by owner, with collaborator and
// viewer as members.
func (env *scenarioEnv) freshSession(t *testing.T) string {
	t.Helper()
	id := authtest.CreateSession(t, env.DB, env.Users[actorOwner].ID)
	for a, role := range map[scenarioActor]auth.SessionRole{actorCollaborator: auth.SessionRoleCollaborator, actorViewer: auth.SessionRoleViewer} {
		if err := env.Auth.AddMember(t.Context(), id, string(a), role); err != nil {
			t.Fatal(err)
		}
	}
	return id
}

// storeSnapshot is the default Snapshot's content.
type storeSnapshot struct {
	Events, Head                 int64
	Members, Links, Revoked      int64
	Users, Tokens, RevokedTokens int64
}

func (env *scenarioEnv) defaultSnapshot(t *testing.T) any {
	t.Helper()
	var s storeSnapshot
	r := env.DB.R
	checks := []error{
		r.Model(&models.LogRow{}).Where("log_key = (SELECT log_key FROM sessions WHERE id = ?)", env.SessionID).Select("COALESCE(SUM(n), 0)").Scan(&s.Events).Error,
		r.Model(&models.Session{}).Where("id = ?", env.SessionID).Select("head").Scan(&s.Head).Error,
		r.Model(&models.Member{}).Where("session_id = ?", env.SessionID).Count(&s.Members).Error,
		r.Model(&models.ShareLink{}).Count(&s.Links).Error,
		r.Model(&models.ShareLink{}).Where("revoked_at IS NOT NULL").Count(&s.Revoked).Error,
		r.Model(&models.User{}).Count(&s.Users).Error,
		r.Model(&models.APIToken{}).Count(&s.Tokens).Error,
		r.Model(&models.APIToken{}).Where("revoked_at IS NOT NULL").Count(&s.RevokedTokens).Error,
	}
	for _, err := range checks {
		if err != nil {
			t.Fatalf("snapshot: %v", err)
		}
	}
	return s
}

// requestFor builds the row's request for actor a, with sessionID as {session}.
func (env *scenarioEnv) requestFor(t *testing.T, row scenarioRow, a scenarioActor, sessionID string) *http.Request {
	t.Helper()
	path := strings.NewReplacer(
		"{session}", sessionID,
		"{share}", env.shareOf(a),
		"{setup}", strings.Repeat("s", 43),
	).Replace(row.Path)
	if strings.HasPrefix(path, "/ws") && env.shares[a] != "" {
		path += "?share=" + env.shares[a]
	}
	form := row.Form
	if row.Body != nil {
		form = row.Body(a)
	}
	var body io.Reader
	ctype := ""
	switch {
	case row.JSON != nil:
		b, err := json.Marshal(row.JSON)
		if err != nil {
			t.Fatal(err)
		}
		body, ctype = bytes.NewReader(b), "application/json"
	case form != nil || row.PreLogin:
		f := url.Values{}
		for k, v := range form {
			f[k] = v
		}
		if row.PreLogin && !row.NoCSRF {
			f.Set("_csrf", scenarioPreLogin)
		}
		body, ctype = strings.NewReader(f.Encode()), "application/x-www-form-urlencoded"
	}
	req, err := http.NewRequestWithContext(t.Context(), row.Method, env.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if row.PreLogin {
		req.AddCookie(&http.Cookie{Name: preLoginCookie, Value: scenarioPreLogin})
	}
	// Each request comes from its own address, so the login limiter does
	// not couple rows (the loopback peer is a trusted proxy).
	n := env.addr.Add(1)
	req.Header.Set("X-Forwarded-For", fmt.Sprintf("198.51.%d.%d", n/250%250, n%250))
	env.authenticate(t, req, row, a)
	return req
}

// scenarioPreLogin is the double-submit token the harness uses.
var scenarioPreLogin = strings.Repeat("p", preLoginLen)

func (env *scenarioEnv) shareOf(a scenarioActor) string {
	if s := env.shares[a]; s != "" {
		return s
	}
	return strings.Repeat("x", 43) // well-formed, unknown
}

// authenticate adds a's credentials. User actors log in afresh for every
// cookie request, so rows that log out do not affect later rows.
func (env *scenarioEnv) authenticate(t *testing.T, req *http.Request, row scenarioRow, a scenarioActor) {
	t.Helper()
	unsafe := req.Method != http.MethodGet && req.Method != http.MethodHead
	switch {
	case a == actorExpiredCookie:
		req.AddCookie(&http.Cookie{Name: sessionCookie, Value: env.expiredCookie})
	case a == actorBadToken && row.Auth == viaBearer:
		req.Header.Set("Authorization", "Bearer "+env.tokens[a])
	case a == actorBadToken:
		req.AddCookie(&http.Cookie{Name: sessionCookie, Value: strings.Repeat("B", 43)})
	case env.Users[a].ID == "":
		// anonymous and share actors: nothing (shares travel in the path)
	case row.Auth == viaBearer:
		req.Header.Set("Authorization", "Bearer "+env.tokens[a])
	default:
		cookie, csrf := env.login(t, a)
		req.AddCookie(&http.Cookie{Name: sessionCookie, Value: cookie})
		if unsafe && !row.NoCSRF {
			req.Header.Set("X-CSRF-Token", csrf)
		}
	}
}

// login opens a login session for user actor a.
func (env *scenarioEnv) login(t *testing.T, a scenarioActor) (cookie, csrf string) {
	t.Helper()
	cookie, info, err := env.Auth.Login(t.Context(), string(a), password(a), "127.0.0.1", "scenario")
	if err != nil {
		t.Fatalf("log %s in: %v", a, err)
	}
	env.secrets = append(env.secrets, cookie)
	return cookie, info.CSRFToken
}

// do sends req without following redirects and returns the response with
// its body read.
func (env *scenarioEnv) do(t *testing.T, req *http.Request) (*http.Response, string) {
	t.Helper()
	return doWith(t, env.client, req)
}

// doWith sends req with client and returns the response with its body read.
func doWith(t *testing.T, client *http.Client, req *http.Request) (*http.Response, string) {
	t.Helper()
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(b)
}

// runScenarios runs every row for every actor, in order, and reports
// every problem.
func runScenarios(t *testing.T, env *scenarioEnv, rows []scenarioRow) {
	t.Helper()
	for _, p := range env.run(t, rows) {
		t.Error(p)
	}
}

// run returns the problems instead of reporting them, so the harness can
// be tested on routes that misbehave.
func (env *scenarioEnv) run(t *testing.T, rows []scenarioRow) []string {
	t.Helper()
	var problems []string
	for _, row := range rows {
		for _, a := range allActors {
			want, ok := row.Want[a]
			if !ok {
				problems = append(problems, fmt.Sprintf("%s: no expectation for actor %s", row.Name, a))
				continue
			}
			sid := env.SessionID
			if row.Fresh {
				sid = env.freshSession(t)
			}
			req := env.requestFor(t, row, a, sid)
			before := env.Snapshot(t)
			status, body := env.send(t, row, req)
			if status != want {
				problems = append(problems, fmt.Sprintf("%s as %s: status %d, want %d; body %.200q", row.Name, a, status, want, body))
			}
			if !row.Mutates || status >= 400 {
				if after := env.Snapshot(t); !reflect.DeepEqual(before, after) {
					problems = append(problems, fmt.Sprintf("%s as %s (status %d) changed the store:\nbefore %+v\nafter  %+v", row.Name, a, status, before, after))
				}
			}
			problems = append(problems, env.secretsIn(fmt.Sprintf("%s as %s: response", row.Name, a), body)...)
		}
	}
	return append(problems, env.secretsIn("server log", env.Logs.String())...)
}

// send performs req over HTTP, or with row.Send; the body it returns
// includes the response headers, for the secret check.
func (env *scenarioEnv) send(t *testing.T, row scenarioRow, req *http.Request) (int, string) {
	t.Helper()
	if row.Send != nil {
		return row.Send(t, env, req)
	}
	res, body := env.do(t, req)
	return res.StatusCode, body + fmt.Sprint(res.Header)
}

// secretsIn reports each password, token, cookie or link the harness
// handed out that appears in s.
func (env *scenarioEnv) secretsIn(where, s string) []string {
	var out []string
	for _, sec := range env.secrets {
		if strings.Contains(s, sec) {
			out = append(out, fmt.Sprintf("%s contains a secret (%.6s…)", where, sec))
		}
	}
	return out
}

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// slogTo is a debug-level text logger into w, so secret checks see everything.
func slogTo(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
