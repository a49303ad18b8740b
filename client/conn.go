package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/coder/websocket"
)

// Request is one WebSocket request; Conn.Do fills ID when empty.
type Request struct {
	ID      string `json:"id"`
	Op      string `json:"op"`
	Session string `json:"session,omitempty"`
	Since   *int64 `json:"since,omitempty"`
	Render  string `json:"render,omitempty"`
	Batch   bool   `json:"batch,omitempty"`
	Content string `json:"content,omitempty"`
	// Attachments are ids of images uploaded to the session (followup,
	// steer; UploadImage), sent after the text.
	Attachments []string `json:"attachments,omitempty"`
	KeepInbox   bool     `json:"keepInbox,omitempty"`
	Item        string   `json:"item,omitempty"`
	Approval    string   `json:"approval,omitempty"`
	Decision    string   `json:"decision,omitempty"`
	Question    string   `json:"question,omitempty"`
	Answers     []Answer `json:"answers,omitempty"`
	Mode        string   `json:"mode,omitempty"`
	Provider    string   `json:"provider,omitempty"`
	Model       string   `json:"model,omitempty"`
	// Effort is a reasoning effort (set_effort; empty: the model's default).
	Effort string `json:"effort,omitempty"`
	// Tool names a tool (approvals.revoke).
	Tool string `json:"tool,omitempty"`
	// Turn names a failed turn (retry).
	Turn int `json:"turn,omitempty"`
}

// Response answers a Request.
type Response struct {
	Re        string `json:"re"`
	OK        bool   `json:"ok"`
	Error     *Error `json:"error,omitempty"`
	MessageID string `json:"messageId,omitempty"`
	Role      string `json:"role,omitempty"`
	// Context is the session's context meter (subscribe).
	Context *ContextMeter `json:"context,omitempty"`
	// Compaction is the outcome of a compact request.
	Compaction *CompactResult `json:"compaction,omitempty"`
}

// Conn is a WebSocket connection: requests are correlated with their
// answers by id; pushes of subscribed sessions go to their Subscription,
// the rest to Pushes.
type Conn struct {
	sock *websocket.Conn
	// Request ids are the prefix and a counter: unique across connections,
	// since a followup's or steer's id is its idempotency key.
	prefix string
	nextID atomic.Uint64

	mu      sync.Mutex
	pending map[string]*call
	subs    map[string]*Subscription   // routing: session id → subscription
	open    map[*Subscription]struct{} // channels not closed yet
	err     error

	pushes chan Push
	done   chan struct{}

	names interner // reader goroutine only
}

// call is a request waiting for its answer; after runs on the reader
// goroutine when the answer arrives, before it is handed over.
type call struct {
	ch    chan Response // buffered 1
	after func(Response)
}

// Subscription receives one session's pushes, in order.
type Subscription struct {
	Session string
	// Role is the caller's role on the session.
	Role string
	// Context is the session's context meter when it subscribed.
	Context ContextMeter
	// C is closed on unsubscribe, on session/closed, and when the
	// connection ends (then Conn.Err says why).
	C <-chan Push
	c chan Push
	// gone stops the reader from waiting on c once the subscription is
	// abandoned; c itself is only ever closed by the reader goroutine.
	gone     chan struct{}
	goneOnce sync.Once
	// deliver, when set, takes each push on the reader goroutine instead
	// of C (Follow's handler: one goroutine wake-up less per push);
	// false ends the connection.
	deliver func(Push) bool
}

func (s *Subscription) abandon() { s.goneOnce.Do(func() { close(s.gone) }) }

// SubscriptionBuffer is each subscription's channel size; a subscriber that
// does not drain it stalls the connection, and the server eventually cuts
// it as a slow consumer.
const SubscriptionBuffer = 256

// Dial opens the WebSocket with the client's credentials. The Origin is
// the server's own, as a browser's would be.
func (c *Client) Dial(ctx context.Context) (*Conn, error) {
	u, err := url.Parse(c.base + "/ws")
	if err != nil {
		return nil, err
	}
	switch u.Scheme {
	case "https":
		u.Scheme = "wss"
	default:
		u.Scheme = "ws"
	}
	if c.share != "" {
		u.RawQuery = url.Values{"share": {c.share}}.Encode()
	}
	h := http.Header{}
	h.Set("Origin", c.base)
	h.Set("Accept", "application/json") // errors before the upgrade come as JSON
	switch {
	case c.token != "":
		h.Set("Authorization", "Bearer "+c.token)
	case c.cookie != "" && c.share == "":
		h.Set("Cookie", (&http.Cookie{Name: cookieName, Value: c.cookie}).String())
	}
	sock, res, err := websocket.Dial(ctx, u.String(), &websocket.DialOptions{HTTPClient: c.http, HTTPHeader: h})
	if err != nil {
		if res != nil && res.StatusCode != http.StatusSwitchingProtocols {
			defer res.Body.Close()
			return nil, decodeError(res)
		}
		return nil, fmt.Errorf("dial %s: %w", u.Redacted(), err)
	}
	sock.SetReadLimit(32 << 20) // events carry whole tool results
	cn := &Conn{
		sock: sock, prefix: NewKey() + "-", pending: map[string]*call{}, subs: map[string]*Subscription{}, open: map[*Subscription]struct{}{},
		pushes: make(chan Push, 256), done: make(chan struct{}),
	}
	go cn.readLoop()
	return cn, nil
}

// Pushes delivers pushes that belong to no subscription (sessions/changed,
// error). It is buffered; when nobody drains it, further such pushes are
// dropped rather than stalling the connection.
func (cn *Conn) Pushes() <-chan Push { return cn.pushes }

// Done is closed when the connection has ended.
func (cn *Conn) Done() <-chan struct{} { return cn.done }

// Err is why the connection ended (a websocket.CloseError for a close
// frame; see CloseStatus), nil while it is open.
func (cn *Conn) Err() error {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.err
}

// CloseStatus is the close code the server sent, or -1.
func CloseStatus(err error) int { return int(websocket.CloseStatus(err)) }

// Close closes the connection normally.
func (cn *Conn) Close() error {
	err := cn.sock.Close(websocket.StatusNormalClosure, "")
	<-cn.done
	return err
}

func (cn *Conn) readLoop() {
	var err error
	defer func() { cn.finish(err) }()
	var buf []byte
	for {
		var data []byte
		data, buf, err = readMessage(cn.sock, buf)
		if err != nil {
			return
		}
		// One decode per frame: this loop is the client's hot path.
		var p Push
		if decodeEventPush(data, &p, &cn.names) {
			cn.route(p)
			continue
		}
		var w wireFrame
		if json.Unmarshal(data, &w) != nil {
			continue
		}
		if w.Re != nil {
			if r, err := w.response(); err == nil {
				cn.answer(r)
			}
			continue
		}
		if w.push(&p, data) != nil {
			continue
		}
		cn.route(p)
	}
}

// readMessage reads the next message through buf (grown as needed and
// returned for the next call) and returns it in a slice of its own size:
// the push it becomes may be kept by its handler. websocket.Conn.Read's
// io.ReadAll allocates twice that or more for every message.
func readMessage(sock *websocket.Conn, buf []byte) (msg, next []byte, err error) {
	_, r, err := sock.Reader(context.Background())
	if err != nil {
		return nil, buf, err
	}
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, buf, err
		}
	}
	if cap(buf) > 1<<20 { // a large replay page: not for the connection's life
		return buf, nil, nil
	}
	return bytes.Clone(buf), buf, nil
}

func (cn *Conn) answer(r Response) {
	cn.mu.Lock()
	c := cn.pending[r.Re]
	delete(cn.pending, r.Re)
	cn.mu.Unlock()
	if c == nil {
		return
	}
	if c.after != nil {
		c.after(r)
	}
	c.ch <- r
}

// route hands a push to its subscription (waiting while its buffer is full,
// unless it is abandoned) or to Pushes (dropping when full).
func (cn *Conn) route(p Push) {
	cn.mu.Lock()
	var sub *Subscription
	if p.Ch != ChSessionsChanged {
		sub = cn.subs[p.Session]
	}
	if sub != nil && p.Ch == ChClosed {
		delete(cn.subs, p.Session)
	}
	cn.mu.Unlock()
	if sub == nil {
		select {
		case cn.pushes <- p:
		default:
		}
		return
	}
	if sub.deliver != nil {
		if !sub.deliver(p) {
			sub.abandon()
			_ = cn.sock.CloseNow() // the reader's next read fails: the connection ends
		}
	} else {
		select {
		case sub.c <- p:
		case <-sub.gone:
		}
	}
	if p.Ch == ChClosed {
		cn.closeSub(sub)
	}
}

// closeSub closes a subscription's channel once; reader goroutine only.
func (cn *Conn) closeSub(s *Subscription) {
	cn.mu.Lock()
	_, open := cn.open[s]
	delete(cn.open, s)
	if cn.subs[s.Session] == s {
		delete(cn.subs, s.Session)
	}
	cn.mu.Unlock()
	if open {
		close(s.c)
	}
}

func (cn *Conn) finish(err error) {
	cn.mu.Lock()
	cn.err = err
	subs := cn.open
	cn.open = map[*Subscription]struct{}{}
	cn.subs = map[string]*Subscription{}
	pending := cn.pending
	cn.pending = map[string]*call{}
	cn.mu.Unlock()
	for s := range subs {
		close(s.c)
	}
	for _, c := range pending {
		close(c.ch)
	}
	close(cn.pushes)
	close(cn.done)
}

// Do sends a request and waits for its answer; a refused request returns
// the answer and an *Error.
func (cn *Conn) Do(ctx context.Context, req Request) (Response, error) {
	return cn.do(ctx, req, nil)
}

func (cn *Conn) do(ctx context.Context, req Request, after func(Response)) (Response, error) {
	if req.ID == "" {
		req.ID = cn.prefix + strconv.FormatUint(cn.nextID.Add(1), 10)
	}
	b, err := json.Marshal(req)
	if err != nil {
		return Response{}, err
	}
	ch := make(chan Response, 1)
	cn.mu.Lock()
	if cn.err != nil || isClosed(cn.done) {
		err := cn.err
		cn.mu.Unlock()
		return Response{}, fmt.Errorf("connection closed: %w", err)
	}
	cn.pending[req.ID] = &call{ch: ch, after: after}
	cn.mu.Unlock()
	if err := cn.sock.Write(ctx, websocket.MessageText, b); err != nil {
		cn.forget(req.ID)
		return Response{}, err
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return Response{}, fmt.Errorf("connection closed: %w", cn.Err())
		}
		if !r.OK {
			if r.Error == nil {
				r.Error = &Error{Code: "internal", Message: "refused without an error"}
			}
			return r, r.Error
		}
		return r, nil
	case <-ctx.Done():
		if after == nil {
			cn.forget(req.ID)
		}
		return Response{}, ctx.Err()
	}
}

func (cn *Conn) forget(id string) {
	cn.mu.Lock()
	delete(cn.pending, id)
	cn.mu.Unlock()
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// SubscribeOptions tune Subscribe.
type SubscribeOptions struct {
	// RenderHTML asks for server-rendered HTML on session/event pushes.
	RenderHTML bool
	// Batch asks for session/events pushes (ChEvents, Push.Events): the
	// replay in pages and, live, the events that queued up while the
	// socket was busy in one push, each run of text or reasoning deltas of
	// a block merged into one event (Event.From). Without it every event
	// comes alone, as stored.
	Batch bool
	// Buffer is the subscription channel's size (default
	// SubscriptionBuffer).
	Buffer int
}

// Subscribe follows a session: every event with seq > since (-1: all) is
// replayed, then the live tail follows with no gap, and replay/done marks
// the end of the replay. The current status, queue and pending
// interactions arrive right after the replay.
func (cn *Conn) Subscribe(ctx context.Context, session string, since int64, opts ...SubscribeOptions) (*Subscription, error) {
	var o SubscribeOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	return cn.subscribe(ctx, session, since, o, nil)
}

// subscribe is Subscribe; with deliver, pushes go to it on the reader
// goroutine instead of the channel.
func (cn *Conn) subscribe(ctx context.Context, session string, since int64, o SubscribeOptions, deliver func(Push) bool) (*Subscription, error) {
	if o.Buffer <= 0 {
		o.Buffer = SubscriptionBuffer
	}
	if deliver != nil {
		o.Buffer = 1 // unused
	}
	c := make(chan Push, o.Buffer)
	sub := &Subscription{Session: session, C: c, c: c, gone: make(chan struct{}), deliver: deliver}
	cn.mu.Lock()
	if _, dup := cn.subs[session]; dup {
		cn.mu.Unlock()
		return nil, &Error{Code: "conflict", Message: "already subscribed on this connection"}
	}
	// Registered before the request: the replay follows the answer at once.
	cn.subs[session] = sub
	cn.open[sub] = struct{}{}
	cn.mu.Unlock()
	req := Request{Op: "subscribe", Session: session, Since: &since}
	if o.RenderHTML {
		req.Render = "html"
	}
	req.Batch = o.Batch
	r, err := cn.do(ctx, req, func(r Response) {
		if !r.OK {
			cn.closeSub(sub)
		}
	})
	if err != nil {
		sub.abandon()
		cn.mu.Lock()
		if cn.subs[session] == sub {
			delete(cn.subs, session)
		}
		cn.mu.Unlock()
		return nil, err
	}
	sub.Role = r.Role
	if r.Context != nil {
		sub.Context = *r.Context
	}
	return sub, nil
}

// Unsubscribe stops following the session; its channel is closed once the
// server confirms (pushes still queued for it are dropped).
func (cn *Conn) Unsubscribe(ctx context.Context, session string) error {
	cn.mu.Lock()
	sub := cn.subs[session]
	delete(cn.subs, session)
	cn.mu.Unlock()
	if sub != nil {
		sub.abandon()
	}
	_, err := cn.do(ctx, Request{Op: "unsubscribe", Session: session}, func(Response) {
		if sub != nil {
			cn.closeSub(sub)
		}
	})
	return err
}

// Ping round-trips a ping request.
func (cn *Conn) Ping(ctx context.Context) error {
	_, err := cn.Do(ctx, Request{Op: "ping"})
	return err
}

// Followup queues a message as its own turn and returns its id.
func (cn *Conn) Followup(ctx context.Context, session, content string) (string, error) {
	r, err := cn.Do(ctx, Request{Op: "followup", Session: session, Content: content})
	return r.MessageID, err
}

// Steer sends a message into the running turn's next step.
func (cn *Conn) Steer(ctx context.Context, session, content string) (string, error) {
	r, err := cn.Do(ctx, Request{Op: "steer", Session: session, Content: content})
	return r.MessageID, err
}

// Cancel aborts the running turn; keepInbox keeps the queue.
func (cn *Conn) Cancel(ctx context.Context, session string, keepInbox bool) error {
	_, err := cn.Do(ctx, Request{Op: "cancel", Session: session, KeepInbox: keepInbox})
	return err
}

// InboxEdit replaces a queued message's text.
func (cn *Conn) InboxEdit(ctx context.Context, session, item, content string) error {
	_, err := cn.Do(ctx, Request{Op: "inbox.edit", Session: session, Item: item, Content: content})
	return err
}

// InboxRemove removes a queued message.
func (cn *Conn) InboxRemove(ctx context.Context, session, item string) error {
	_, err := cn.Do(ctx, Request{Op: "inbox.remove", Session: session, Item: item})
	return err
}

// InboxSteer moves a queued message into the running turn.
func (cn *Conn) InboxSteer(ctx context.Context, session, item string) error {
	_, err := cn.Do(ctx, Request{Op: "inbox.steer", Session: session, Item: item})
	return err
}

// InboxRun starts a paused queue (after Stop): the idle agent runs the next
// queued message now.
func (cn *Conn) InboxRun(ctx context.Context, session string) error {
	_, err := cn.Do(ctx, Request{Op: "inbox.run", Session: session})
	return err
}

// InboxClear removes every queued message.
func (cn *Conn) InboxClear(ctx context.Context, session string) error {
	_, err := cn.Do(ctx, Request{Op: "inbox.clear", Session: session})
	return err
}

// Approve allows (once) or denies a pending approval.
func (cn *Conn) Approve(ctx context.Context, session, approval string, allow bool) error {
	return cn.Decide(ctx, session, approval, decision(allow))
}

// ApproveSession allows a pending approval and every later call of the
// same tool in the session, until RevokeTool.
func (cn *Conn) ApproveSession(ctx context.Context, session, approval string) error {
	return cn.Decide(ctx, session, approval, DecisionAllowSession)
}

// Decide answers a pending approval with d.
func (cn *Conn) Decide(ctx context.Context, session, approval string, d Decision) error {
	_, err := cn.Do(ctx, Request{Op: "approve", Session: session, Approval: approval, Decision: string(d)})
	return err
}

// RevokeTool ends "allow for this session" for tool (op approvals.revoke).
func (cn *Conn) RevokeTool(ctx context.Context, session, tool string) error {
	_, err := cn.Do(ctx, Request{Op: "approvals.revoke", Session: session, Tool: tool})
	return err
}

// Answer answers a pending question batch.
func (cn *Conn) Answer(ctx context.Context, session, question string, answers []Answer) error {
	_, err := cn.Do(ctx, Request{Op: "answer", Session: session, Question: question, Answers: answers})
	return err
}

// SetMode sets the permission mode (read-only, ask, auto).
func (cn *Conn) SetMode(ctx context.Context, session, mode string) error {
	_, err := cn.Do(ctx, Request{Op: "set_mode", Session: session, Mode: mode})
	return err
}

// SetModel selects the route for the next requests.
func (cn *Conn) SetModel(ctx context.Context, session, provider, model string) error {
	_, err := cn.Do(ctx, Request{Op: "set_model", Session: session, Provider: provider, Model: model})
	return err
}

// SetEffort sets the reasoning effort of the next requests: off (no
// thinking), low, high or max; "" is the model's default.
func (cn *Conn) SetEffort(ctx context.Context, session, effort string) error {
	_, err := cn.Do(ctx, Request{Op: "set_effort", Session: session, Effort: effort})
	return err
}

// Compact compacts the session's history into a summary now (writers, on
// an idle session; "busy" otherwise). The answer comes once the summary is
// written, which takes a model call.
func (cn *Conn) Compact(ctx context.Context, session string) (CompactResult, error) {
	r, err := cn.Do(ctx, Request{Op: "compact", Session: session})
	if err != nil {
		return CompactResult{}, err
	}
	if r.Compaction == nil {
		return CompactResult{}, errors.New("compact: the answer has no result")
	}
	return *r.Compaction, nil
}

// Retry sends the prompt of failed turn turn again as a new followup and
// returns the new message's id ("bad_request" for a turn that did not
// fail).
func (cn *Conn) Retry(ctx context.Context, session string, turn int) (string, error) {
	r, err := cn.Do(ctx, Request{Op: "retry", Session: session, Turn: turn})
	if err != nil {
		return "", err
	}
	return r.MessageID, nil
}

// IsSlowConsumer reports whether err is the close of a connection cut for
// falling behind.
func IsSlowConsumer(err error) bool {
	return CloseStatus(err) == CloseSlowConsumer
}

// errTerminal reports answers that retrying cannot fix.
func errTerminal(err error) bool {
	switch CodeOf(err) {
	case "not_found", "forbidden", "unauthorized", "bad_request":
		return true
	}
	var e *Error
	return errors.As(err, &e) && strings.HasPrefix(e.Code, "http_4")
}
