package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client talks to one Harness server over REST, and dials its WebSocket.
// It is safe for concurrent use.
type Client struct {
	base   string
	http   *http.Client
	token  string
	cookie string
	csrf   string
	share  string
}

// Option configures a Client.
type Option func(*Client)

// WithToken authenticates with an API token (Authorization: Bearer).
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithCookie authenticates with a login cookie value and its CSRF token
// (sent on unsafe requests), as a browser would.
func WithCookie(cookie, csrf string) Option {
	return func(c *Client) { c.cookie, c.csrf = cookie, csrf }
}

// WithShareToken makes Dial open a share-link viewer's socket (read-only:
// subscribe, unsubscribe and ping).
func WithShareToken(token string) Option { return func(c *Client) { c.share = token } }

// WithHTTPClient sets the HTTP client used for REST and the WebSocket
// handshake.
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// New returns a client for the server at baseURL (e.g.
// "http://127.0.0.1:8080").
func New(baseURL string, opts ...Option) *Client {
	c := &Client{base: strings.TrimRight(baseURL, "/"), http: &http.Client{Timeout: 60 * time.Second}}
	for _, o := range opts {
		o(c)
	}
	return c
}

// BaseURL is the server's base URL.
func (c *Client) BaseURL() string { return c.base }

const cookieName = "harness_session"

// authorize adds the credentials to a request.
func (c *Client) authorize(r *http.Request) {
	switch {
	case c.token != "":
		r.Header.Set("Authorization", "Bearer "+c.token)
	case c.cookie != "":
		r.AddCookie(&http.Cookie{Name: cookieName, Value: c.cookie})
		if r.Method != http.MethodGet && r.Method != http.MethodHead && c.csrf != "" {
			r.Header.Set("X-CSRF-Token", c.csrf)
		}
	}
}

// do sends a JSON request and decodes a JSON answer into out (nil: none).
// A non-2xx status is returned as *Error.
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	res, err := c.send(ctx, method, path, in)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, res.Body)
		return nil
	}
	if err := json.NewDecoder(res.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
	}
	return nil
}

// send performs a request and returns a 2xx response with its body open.
func (c *Client) send(ctx context.Context, method, path string, in any) (*http.Response, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("%s %s: encode: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	c.authorize(req)
	res, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if res.StatusCode/100 != 2 {
		defer res.Body.Close()
		return nil, decodeError(res)
	}
	return res, nil
}

func decodeError(res *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	var body struct {
		Error *Error `json:"error"`
	}
	if json.Unmarshal(b, &body) == nil && body.Error != nil {
		body.Error.Status = res.StatusCode
		return body.Error
	}
	return &Error{Status: res.StatusCode, Code: "http_" + strconv.Itoa(res.StatusCode), Message: strings.TrimSpace(string(b))}
}

func sessionPath(id string, rest ...string) string {
	p := "/api/sessions/" + url.PathEscape(id)
	for _, r := range rest {
		p += "/" + url.PathEscape(r)
	}
	return p
}

// CreateSession creates a session owned by the caller.
func (c *Client) CreateSession(ctx context.Context, opts NewSession) (Session, error) {
	var s Session
	return s, c.do(ctx, http.MethodPost, "/api/sessions", opts, &s)
}

// ListSessions lists the caller's visible sessions, newest first.
func (c *Client) ListSessions(ctx context.Context, opts ListOptions) (SessionList, error) {
	q := url.Values{}
	if opts.Q != "" {
		q.Set("q", opts.Q)
	}
	if opts.Archived != nil {
		q.Set("archived", strconv.FormatBool(*opts.Archived))
	}
	if opts.Limit > 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	if opts.Cursor != "" {
		q.Set("cursor", opts.Cursor)
	}
	path := "/api/sessions"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var l SessionList
	return l, c.do(ctx, http.MethodGet, path, nil, &l)
}

// GetSession reads one session.
func (c *Client) GetSession(ctx context.Context, id string) (Session, error) {
	var s Session
	return s, c.do(ctx, http.MethodGet, sessionPath(id), nil, &s)
}

// UpdateSession renames, archives, or changes mode or route.
func (c *Client) UpdateSession(ctx context.Context, id string, p Patch) (Session, error) {
	var s Session
	return s, c.do(ctx, http.MethodPatch, sessionPath(id), p, &s)
}

// DeleteSession deletes a session, its log and its workspace.
func (c *Client) DeleteSession(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, sessionPath(id), nil, nil)
}

// Events reads events with seq > since (at most limit; 0 = server default).
func (c *Client) Events(ctx context.Context, id string, since int64, limit int) (EventPage, error) {
	q := url.Values{"since": {strconv.FormatInt(since, 10)}}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var p EventPage
	return p, c.do(ctx, http.MethodGet, sessionPath(id, "events")+"?"+q.Encode(), nil, &p)
}

// Export streams the session's log as JSON lines into w.
func (c *Client) Export(ctx context.Context, id string, w io.Writer) error {
	res, err := c.send(ctx, http.MethodGet, sessionPath(id, "export"), nil)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if _, err := io.Copy(w, res.Body); err != nil {
		return fmt.Errorf("export %s: %w", id, err)
	}
	return nil
}

// SendMessage sends a message (mode "followup" or "steer") and returns its
// id once the server has made it durable.
func (c *Client) SendMessage(ctx context.Context, id, content, mode string) (string, error) {
	return c.SendMessageKey(ctx, id, content, mode, NewKey())
}

// SendMessageKey sends a message under clientID, its idempotency key: the
// same key again (a retry after a lost answer) returns the first message's
// id and stores nothing new; the same key with other content is a conflict.
func (c *Client) SendMessageKey(ctx context.Context, id, content, mode, clientID string) (string, error) {
	var out struct {
		ID string `json:"id"`
	}
	err := c.do(ctx, http.MethodPost, sessionPath(id, "messages"), map[string]string{"content": content, "mode": mode, "clientId": clientID}, &out)
	return out.ID, err
}

// NewKey returns a random idempotency key (128 bits, hex).
func NewKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail
	return hex.EncodeToString(b[:])
}

// Cancel aborts the running turn; keepInbox keeps queued messages.
func (c *Client) Cancel(ctx context.Context, id string, keepInbox bool) error {
	return c.do(ctx, http.MethodPost, sessionPath(id, "cancel"), map[string]bool{"keepInbox": keepInbox}, nil)
}

// Compact compacts the session's history into a summary now (writers, on
// an idle session: "busy" with status 409 otherwise). It returns once the
// summary is written, which takes a model call.
func (c *Client) Compact(ctx context.Context, id string) (CompactResult, error) {
	var r CompactResult
	return r, c.do(ctx, http.MethodPost, sessionPath(id, "compact"), nil, &r)
}

// Approve allows (once) or denies a pending approval.
func (c *Client) Approve(ctx context.Context, id, approval string, allow bool) error {
	return c.Decide(ctx, id, approval, decision(allow))
}

// ApproveSession allows a pending approval and every later call of the
// same tool in the session, until RevokeTool.
func (c *Client) ApproveSession(ctx context.Context, id, approval string) error {
	return c.Decide(ctx, id, approval, DecisionAllowSession)
}

// Decide answers a pending approval with d.
func (c *Client) Decide(ctx context.Context, id, approval string, d Decision) error {
	return c.do(ctx, http.MethodPost, sessionPath(id, "approvals", approval), map[string]string{"decision": string(d)}, nil)
}

// RevokeTool ends "allow for this session" for tool: its calls ask again.
// Revoking a tool that is not allowed succeeds and changes nothing.
func (c *Client) RevokeTool(ctx context.Context, id, tool string) error {
	return c.do(ctx, http.MethodDelete, sessionPath(id, "approvals", "tools", tool), nil, nil)
}

func decision(allow bool) Decision {
	if allow {
		return DecisionAllow
	}
	return DecisionDeny
}

// Answer answers a pending question batch.
func (c *Client) Answer(ctx context.Context, id, question string, answers []Answer) error {
	return c.do(ctx, http.MethodPost, sessionPath(id, "questions", question), map[string]any{"answers": answers}, nil)
}

// Fork starts a new session from the prefix [0, atSeq] (nil: all).
func (c *Client) Fork(ctx context.Context, id string, atSeq *int64) (Session, error) {
	var s Session
	return s, c.do(ctx, http.MethodPost, sessionPath(id, "fork"), map[string]*int64{"atSeq": atSeq}, &s)
}

// EditQueueItem replaces a queued message's text.
func (c *Client) EditQueueItem(ctx context.Context, id, item, content string) error {
	return c.do(ctx, http.MethodPatch, sessionPath(id, "queue", item), map[string]string{"content": content}, nil)
}

// RemoveQueueItem removes a queued message.
func (c *Client) RemoveQueueItem(ctx context.Context, id, item string) error {
	return c.do(ctx, http.MethodDelete, sessionPath(id, "queue", item), nil, nil)
}

// SteerQueueItem moves a queued message into the running turn.
func (c *Client) SteerQueueItem(ctx context.Context, id, item string) error {
	return c.do(ctx, http.MethodPost, sessionPath(id, "queue", item, "steer"), nil, nil)
}

// RunQueue starts a paused queue (after Stop): the idle agent runs the next
// queued message now.
func (c *Client) RunQueue(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodPost, sessionPath(id, "queue", "run"), nil, nil)
}

// ClearQueue removes every queued message.
func (c *Client) ClearQueue(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, sessionPath(id, "queue"), nil, nil)
}

// Members lists a session's members.
func (c *Client) Members(ctx context.Context, id string) ([]Member, error) {
	var ms []Member
	return ms, c.do(ctx, http.MethodGet, sessionPath(id, "members"), nil, &ms)
}

// AddMember grants the user name a role (collaborator or viewer).
func (c *Client) AddMember(ctx context.Context, id, name, role string) error {
	return c.do(ctx, http.MethodPost, sessionPath(id, "members"), map[string]string{"name": name, "role": role}, nil)
}

// RemoveMember revokes a member.
func (c *Client) RemoveMember(ctx context.Context, id, name string) error {
	return c.do(ctx, http.MethodDelete, sessionPath(id, "members", name), nil, nil)
}

// ShareLinks lists a session's share links.
func (c *Client) ShareLinks(ctx context.Context, id string) ([]ShareLink, error) {
	var ls []ShareLink
	return ls, c.do(ctx, http.MethodGet, sessionPath(id, "shares"), nil, &ls)
}

// CreateShareLink creates a read-only link; expiresAt nil = no expiry.
func (c *Client) CreateShareLink(ctx context.Context, id string, expiresAt *time.Time) (NewShareLink, error) {
	var l NewShareLink
	return l, c.do(ctx, http.MethodPost, sessionPath(id, "shares"), map[string]*time.Time{"expiresAt": expiresAt}, &l)
}

// RevokeShareLink revokes a link.
func (c *Client) RevokeShareLink(ctx context.Context, id, linkID string) error {
	return c.do(ctx, http.MethodDelete, sessionPath(id, "shares", linkID), nil, nil)
}

// Providers lists the model routes.
func (c *Client) Providers(ctx context.Context) (Providers, error) {
	var p Providers
	return p, c.do(ctx, http.MethodGet, "/api/providers", nil, &p)
}

// WorkspaceRoot is a directory whose subdirectories a user may open as a
// session's workspace.
type WorkspaceRoot struct {
	Path   string   `json:"path"`
	Users  []string `json:"users,omitempty"`
	Shared bool     `json:"shared,omitempty"`
	// Source is "config" (HARNESS_WORKSPACE_ROOTS) or "settings".
	Source string `json:"source,omitempty"`
}

// WorkspaceDir is a directory the workspace picker offers.
type WorkspaceDir struct {
	Name string `json:"name"`
	Path string `json:"path"`
	Git  bool   `json:"git,omitempty"`
}

// WorkspaceRoots lists the roots the caller may open directories under.
func (c *Client) WorkspaceRoots(ctx context.Context) ([]WorkspaceRoot, error) {
	var out struct {
		Roots []WorkspaceRoot `json:"roots"`
	}
	err := c.do(ctx, http.MethodGet, "/api/workspace/roots", nil, &out)
	return out.Roots, err
}

// BrowseWorkspace lists the subdirectories of a root (or a directory under
// one) the caller may use.
func (c *Client) BrowseWorkspace(ctx context.Context, path string) ([]WorkspaceDir, error) {
	var out struct {
		Dirs []WorkspaceDir `json:"dirs"`
	}
	err := c.do(ctx, http.MethodGet, "/api/workspace/browse?path="+url.QueryEscape(path), nil, &out)
	return out.Dirs, err
}
