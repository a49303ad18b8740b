package ws

import (
	"bufio"
	"encoding/binary"
	"net"
	"net/http"
	"sync"
	"syscall"
)

// wire is the write side of one socket. coder/websocket does the
// handshake, reads, and writes the control frames (pong, ping, close)
// through wire.Write; the data frames are ours: a server frame is not
// masked, so one payload's frame is the same bytes for every viewer, and
// a viewer that keeps up gets it written straight from the fan-out
// (tryFrames) without waking its writer goroutine or taking the library's
// per-message locks. At 1,000 viewers of one streaming session that is
// 50,000 frames a second, so what a frame costs besides its write
// system call matters.
//
// mu is held while any frame's bytes go out, so frames never interleave.
// A non-blocking write that got only part of a frame out leaves the rest
// in rest; whoever takes mu next sends it before anything else.
type wire struct {
	conn net.Conn
	raw  syscall.RawConn // nil: no file descriptor, tryFrames never writes

	mu     sync.Mutex
	rest   []byte
	direct directWriter // tryFrames' system call (mu held)
}

func newWire(c net.Conn) *wire {
	w := &wire{conn: c}
	if sc, ok := c.(syscall.Conn); ok && canTryWrite {
		if raw, err := sc.SyscallConn(); err == nil {
			w.raw = raw
			w.direct.init(raw)
		}
	}
	return w
}

// wireConn is the net.Conn the library gets: its writes (whole control
// frames, flushed from its buffer) take the wire's lock.
type wireConn struct {
	net.Conn
	w *wire
}

func (c wireConn) Write(p []byte) (int, error) {
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	if err := c.w.flushRestLocked(); err != nil {
		return 0, err
	}
	return c.w.conn.Write(p)
}

// flushRestLocked sends what a partial non-blocking write left (mu held).
func (w *wire) flushRestLocked() error {
	if len(w.rest) == 0 {
		return nil
	}
	_, err := w.conn.Write(w.rest)
	w.rest = nil
	return err
}

// writeFrame writes payload as one text frame, waiting as long as the
// socket needs (the keepalive drops a socket stuck here).
func (w *wire) writeFrame(payload []byte) error {
	var hb [maxHeader]byte
	hdr := frameHeader(hb[:0], len(payload))
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.flushRestLocked(); err != nil {
		return err
	}
	bufs := net.Buffers{hdr, payload}
	_, err := bufs.WriteTo(w.conn) // one writev on a TCP socket
	return err
}

// flush sends the rest of a partially written frame, if any.
func (w *wire) flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.flushRestLocked()
}

// tryFrames writes payloads as text frames, as far as the socket takes
// them now, without waiting: one writev for at most maxDirect frames.
// sent is how many went out whole; partial: the next one went out in
// part, its rest waits in w.rest (owned by the wire) and the caller must
// have flush called. What was not written at all is the caller's to
// queue as usual.
func (w *wire) tryFrames(payloads [][]byte) (sent int, partial bool) {
	if w.raw == nil || len(payloads) == 0 || !w.mu.TryLock() {
		return 0, false
	}
	defer w.mu.Unlock()
	if len(w.rest) > 0 {
		return 0, false
	}
	payloads = payloads[:min(len(payloads), maxDirect)]
	n, err := w.direct.writev(payloads)
	if n <= 0 || err != nil { // EAGAIN, or an error the writer will meet
		return 0, false
	}
	for _, p := range payloads {
		var hb [maxHeader]byte
		hdr := frameHeader(hb[:0], len(p))
		total := len(hdr) + len(p)
		switch {
		case n >= total:
			n -= total
			sent++
			continue
		case n == 0:
			return sent, false
		}
		rest := make([]byte, 0, total-n)
		if n < len(hdr) {
			rest = append(rest, hdr[n:]...)
			rest = append(rest, p...)
		} else {
			rest = append(rest, p[n-len(hdr):]...)
		}
		w.rest = rest
		return sent, true
	}
	return sent, false
}

// maxHeader is the longest server frame header: no mask, 64-bit length.
const maxHeader = 10

// frameHeader appends the header of an unmasked, final text frame of n
// payload bytes (RFC 6455 5.2).
func frameHeader(b []byte, n int) []byte {
	const finText = 0x80 | 0x1
	switch {
	case n <= 125:
		return append(b, finText, byte(n))
	case n <= 0xFFFF:
		return binary.BigEndian.AppendUint16(append(b, finText, 126), uint16(n))
	default:
		return binary.BigEndian.AppendUint64(append(b, finText, 127), uint64(n))
	}
}

// hijackCapture hands the library a wireConn in place of the hijacked
// connection, so its writes go through the wire.
type hijackCapture struct {
	http.ResponseWriter
	sendBuffer int // SO_SNDBUF when > 0
	wire       *wire
}

func (h *hijackCapture) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok && h.sendBuffer > 0 {
		_ = tc.SetWriteBuffer(h.sendBuffer) // best effort: the kernel caps it
	}
	// The response (101) is flushed before the hijack, so brw.Writer is
	// empty and can be replaced by one that writes through the wire.
	h.wire = newWire(c)
	wc := wireConn{Conn: c, w: h.wire}
	return wc, bufio.NewReadWriter(brw.Reader, bufio.NewWriter(wc)), nil
}
