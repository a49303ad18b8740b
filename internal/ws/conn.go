package ws

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/time/rate"

	"harness/internal/auth"
	"harness/internal/service"
)

// conn is one WebSocket connection.
type conn struct {
	h     *Hub
	sock  *websocket.Conn // nil in tests that drive handle directly
	wire  *wire           // the socket's write side; nil with sock
	actor *auth.Actor
	out   *sendQueue
	// writing is when the frame being written started (unix ns), 0 when
	// the writer is idle; the keepalive drops a socket stuck in a write.
	writing atomic.Int64
	// stall: the keepalive cuts a client that stopped reading.
	stall *stallWatch

	// ctx ends when the connection is gone; requests and replays use it.
	ctx    context.Context
	cancel context.CancelFunc

	// checkMu serialises recheck (keepalive and access notices).
	checkMu sync.Mutex
	// limit is the request rate limit (reader goroutine only).
	limit *rate.Limiter

	mu        sync.Mutex
	subs      map[string]*subscription
	closing   bool
	closeDone chan struct{}  // closed when a started close handshake ended
	wg        sync.WaitGroup // replays
}

func (h *Hub) newConn(sock *websocket.Conn, w *wire, a *auth.Actor) *conn {
	ctx, cancel := context.WithCancel(h.base)
	ctx = auth.ContextWithActor(ctx, a)
	c := &conn{
		h: h, sock: sock, wire: w, actor: a,
		ctx: ctx, cancel: cancel, subs: map[string]*subscription{},
		limit: rate.NewLimiter(rate.Limit(h.opts.CommandRate), h.opts.CommandBurst),
		stall: newStallWatch(h.opts.StallTimeout, time.Now()),
	}
	var direct func([]item) (int, bool)
	if w != nil {
		direct = c.tryDirect
	}
	c.out = newSendQueue(h.opts.SendBytes, direct)
	return c
}

// tryDirect writes items on the socket as far as it takes them now (see
// sendQueue.direct).
func (c *conn) tryDirect(items []item) (sent int, partial bool) {
	var payloads [maxDirect][]byte
	n := min(len(items), maxDirect)
	for i, it := range items[:n] {
		payloads[i] = payload(it)
	}
	sent, partial = c.wire.tryFrames(payloads[:n])
	if sent > 0 || partial {
		c.h.writesOut.Add(1)
		c.stall.wrote(time.Now())
	}
	return sent, partial
}

// run serves the connection until it ends: the writer and the keepalive run
// beside the reader, which handles requests in arrival order.
func (c *conn) run() {
	c.sock.SetReadLimit(c.h.opts.MaxFrame)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.writeLoop()
	}()
	go c.keepalive()
	c.readLoop()
	c.shutdown()
	<-done
}

func (c *conn) readLoop() {
	for {
		// A cancelled read context would close the socket without a close
		// frame; the socket is closed through close/closeNow instead.
		typ, data, err := c.sock.Read(context.Background())
		if err != nil {
			if errors.Is(err, websocket.ErrMessageTooBig) {
				// The library sent close 1009; finish the handshake so
				// the client reads the code instead of a reset.
				c.close(websocket.StatusMessageTooBig, "frame too large")
			} else if websocket.CloseStatus(err) == -1 {
				c.h.log.Debug("websocket read ended", "err", err)
			}
			return
		}
		if !c.limit.Allow() {
			c.refuse(data)
			continue
		}
		if typ != websocket.MessageText {
			c.sendErr("", service.Errorf(service.CodeBadRequest, "only text frames are accepted"))
			continue
		}
		c.handle(data)
	}
}

func (c *conn) writeLoop() {
	for {
		run, err := c.out.popRun(c.ctx, joinBatch, c.h.opts.ReplayPage, replayFrameBytes)
		if err != nil {
			return
		}
		if end := run[0].end; end != nil { // never joined: its ev is nil
			c.close(end.code, end.reason)
			return
		}
		// No per-write deadline context: it would cost two timers per
		// frame on the hottest path; the keepalive watches c.writing.
		c.writing.Store(time.Now().UnixNano())
		if run[0].flush { // never joined either
			err = c.wire.flush()
		} else {
			err = c.write(compose(run))
		}
		c.writing.Store(0)
		if err != nil {
			c.closeNow()
			return
		}
		c.stall.wrote(time.Now())
		c.h.framesOut.Add(1)
		c.h.writesOut.Add(1)
	}
}

// joinBatch: the events of a batch subscriber queued behind each other go
// out in one session/events frame, up to about replayFrameBytes.
func joinBatch(first, next item) bool {
	return first.run != nil && next.run != nil && next.sub == first.sub
}

// write writes one frame's payload.
func (c *conn) write(frame []byte) error {
	if c.wire == nil {
		return c.sock.Write(context.Background(), websocket.MessageText, frame)
	}
	return c.wire.writeFrame(frame)
}

// payload is the frame of one item.
func payload(it item) []byte {
	if it.run == nil {
		return it.frame
	}
	return it.run.frameOf(it.sub.id)
}

// compose is the frame of popped items: ready bytes, or one
// session/events frame of a batch subscriber's events, deltas merged.
func compose(items []item) []byte {
	if len(items) == 1 {
		return payload(items[0])
	}
	var evs []*liveEvent
	for _, it := range items {
		evs = append(evs, it.run.evs...)
	}
	return batchFrame(items[0].sub.id, evs, true)
}

// keepalive pings every PingInterval (a missing pong closes the socket)
// and re-checks the credential and the subscriptions (recheck): access
// notices cut revocations made in this process at once, this catches the
// rest (an expired login, the CLI revoking a token). It also cuts a client
// that stopped reading while its queue grows (StallTimeout, 4008), and
// drops a socket whose current write has taken longer than WriteTimeout
// while nothing more queued (a dead peer).
func (c *conn) keepalive() {
	t := time.NewTicker(c.h.opts.PingInterval)
	defer t.Stop()
	watch := time.NewTicker(max(min(c.h.opts.WriteTimeout, c.h.opts.StallTimeout)/4, 10*time.Millisecond))
	defer watch.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case now := <-watch.C:
			growing, stalled := c.stall.check(now, c.out.size())
			if stalled {
				c.slow("read nothing while its queue grew")
				return
			}
			// A write stuck while frames keep queuing is a client that
			// stopped reading: the stall rule above cuts it, with 4008.
			// One stuck on a quiet socket is a dead peer.
			if start := c.writing.Load(); start != 0 && !growing && now.Sub(time.Unix(0, start)) > c.h.opts.WriteTimeout {
				c.h.log.Debug("websocket write timed out")
				c.closeNow()
				return
			}
			continue
		case <-t.C:
		}
		// A client that reads nothing while frames queue for it cannot
		// answer a ping either (the ping waits behind what it has not
		// read): the stall rule judges it, with 4008, not the keepalive.
		if !c.growing() {
			ctx, cancel := context.WithTimeout(c.ctx, c.h.opts.PingInterval)
			err := c.sock.Ping(ctx)
			cancel()
			if c.ctx.Err() != nil {
				return
			}
			if err != nil && !c.growing() {
				c.h.log.Debug("websocket keepalive failed", "err", err)
				c.closeNow()
				return
			}
		}
		c.recheck()
	}
}

// growing reports whether the send queue grew since the socket last took
// bytes (keepalive goroutine only).
func (c *conn) growing() bool {
	growing, _ := c.stall.check(time.Now(), c.out.size())
	return growing
}

// handle answers one frame; a panic is answered internal and the
// connection goes on.
func (c *conn) handle(data []byte) {
	req, perr := decodeRequest(data)
	defer func() {
		if r := recover(); r != nil {
			c.h.log.Error("websocket handler panicked", "op", req.Op, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			c.sendErr(req.ID, service.Errorf(service.CodeInternal, "internal error"))
		}
	}()
	if perr != nil {
		c.sendErr(req.ID, perr)
		return
	}
	if resp, ok := c.dispatch(req); ok {
		c.send(mustJSON(resp))
	}
}

// refuse answers a request over the rate limit without running it. The
// flood is answered rather than read more slowly, so the client learns
// why; its answers are small, so its queue grows no faster than it reads.
func (c *conn) refuse(data []byte) {
	req, _ := decodeRequest(data)
	c.sendErr(req.ID, service.Errorf(service.CodeRateLimited,
		"too many requests: at most %g per second on average, %d at once", c.h.opts.CommandRate, c.h.opts.CommandBurst))
}

// sendErr answers a request with an error, or pushes an error frame when
// the request had no id.
func (c *conn) sendErr(id string, e *service.Error) {
	if id == "" {
		c.send(mustJSON(Push{Ch: ChError, Error: e}))
		return
	}
	c.send(mustJSON(Response{Re: id, Error: e}))
}

// send queues a frame; a full queue makes the connection a slow consumer.
func (c *conn) send(frame []byte) {
	c.offer(item{frame: frame, seq: -1})
}

func (c *conn) offer(items ...item) {
	written, refused := c.out.offer(items...)
	if written > 0 {
		c.h.framesOut.Add(uint64(written))
	}
	if refused {
		c.slow("queue bound")
	}
}

// slow cuts a consumer that cannot keep up, for cause: it resumes with
// since. Its queued frames are dropped at once.
func (c *conn) slow(cause string) {
	c.mu.Lock()
	already := c.closing
	c.mu.Unlock()
	if already {
		return
	}
	c.h.slowClosed.Add(1)
	c.h.log.Info("websocket slow consumer cut", "user", c.actor.UserID, "queued", c.out.len(), "cause", cause)
	c.close(CloseSlowConsumer, ReasonSlowConsumer)
}

// close starts the close handshake with code and reason; queued frames
// that were not written yet are dropped.
func (c *conn) close(code websocket.StatusCode, reason string) {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return
	}
	c.closing = true
	done := make(chan struct{})
	c.closeDone = done
	c.mu.Unlock()
	c.out.close()
	if c.sock == nil {
		c.cancel()
		close(done)
		return
	}
	// Close waits for the write lock and the peer's answer; never block
	// the caller (it may hold a topic's lock).
	go func() {
		defer close(done)
		_ = c.sock.Close(code, reason)
	}()
}

// closeNow drops the socket without a handshake.
func (c *conn) closeNow() {
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	c.out.close()
	if c.sock != nil {
		go func() { _ = c.sock.CloseNow() }()
	} else {
		c.cancel()
	}
}

// shutdown ends everything of the connection once its reader stopped.
func (c *conn) shutdown() {
	c.mu.Lock()
	c.closing = true
	closeDone := c.closeDone
	subs := make([]*subscription, 0, len(c.subs))
	for _, s := range c.subs {
		subs = append(subs, s)
	}
	clear(c.subs)
	c.mu.Unlock()
	c.out.close()
	c.cancel()
	for _, s := range subs {
		s.end()
	}
	c.wg.Wait()
	if closeDone != nil {
		<-closeDone // bounded by the library's close timeouts
	} else if c.sock != nil {
		_ = c.sock.CloseNow()
	}
	c.h.unregister(c)
}

func (c *conn) subCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.subs)
}
