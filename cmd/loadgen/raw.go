package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"harness/client"
)

// A raw viewer (-raw) reads the live edge as cheaply as the machine's
// floor client does: its own WebSocket handshake and frame reader, and
// the tick stamps found in the frames' bytes, with no JSON decode and no
// client package. With the viewers on the server's machine, what they
// spend is taken from the server; this keeps it near the floor's
// (loadgen -floor), so the latency measured is the server's. The
// default viewers (client.Follow, every push decoded) are what a Go
// program following a session costs.

// rawConn is one raw viewer's socket.
type rawConn struct {
	c   net.Conn
	br  *bufio.Reader
	buf []byte // the payload being read, reused
	out []byte // a frame being written, reused
}

// errRawClosed is a close frame from the server; code is its status.
type errRawClosed struct{ code int }

func (e errRawClosed) Error() string { return fmt.Sprintf("websocket closed with %d", e.code) }

// dialRaw opens /ws on base with token and does the opening handshake
// (RFC 6455 4.1).
func dialRaw(ctx context.Context, base, token string) (*rawConn, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" {
		return nil, fmt.Errorf("-raw viewers speak plain http only, not %s", u.Scheme)
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return nil, err
	}
	var k [16]byte
	_, _ = rand.Read(k[:])
	key := base64.StdEncoding.EncodeToString(k[:])
	req := "GET /ws HTTP/1.1\r\nHost: " + u.Host + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: " + key + "\r\nSec-WebSocket-Version: 13\r\nOrigin: " + base + "\r\n" +
		"Authorization: Bearer " + token + "\r\n\r\n"
	if _, err := io.WriteString(c, req); err != nil {
		c.Close()
		return nil, err
	}
	br := bufio.NewReaderSize(c, 16<<10)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		c.Close()
		return nil, err
	}
	sum := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	if res.StatusCode != http.StatusSwitchingProtocols || res.Header.Get("Sec-WebSocket-Accept") != base64.StdEncoding.EncodeToString(sum[:]) {
		c.Close()
		return nil, fmt.Errorf("websocket handshake: %s", res.Status)
	}
	return &rawConn{c: c, br: br}, nil
}

// write sends one masked client frame (RFC 6455 5.2, 5.3).
func (r *rawConn) write(opcode byte, payload []byte) error {
	b := append(r.out[:0], 0x80|opcode)
	switch n := len(payload); {
	case n <= 125:
		b = append(b, 0x80|byte(n))
	case n <= 0xFFFF:
		b = binary.BigEndian.AppendUint16(append(b, 0x80|126), uint16(n))
	default:
		b = binary.BigEndian.AppendUint64(append(b, 0x80|127), uint64(n))
	}
	var mask [4]byte
	_, _ = rand.Read(mask[:])
	b = append(b, mask[:]...)
	for i, c := range payload {
		b = append(b, c^mask[i%4])
	}
	r.out = b
	_, err := r.c.Write(b)
	return err
}

// next returns the next text frame's payload (valid until the next
// call), answering pings on the way.
func (r *rawConn) next() ([]byte, error) {
	for {
		var h [2]byte
		if _, err := io.ReadFull(r.br, h[:]); err != nil {
			return nil, err
		}
		if h[1]&0x80 != 0 {
			return nil, errors.New("masked server frame")
		}
		n := uint64(h[1] & 0x7F)
		switch n {
		case 126:
			var e [2]byte
			if _, err := io.ReadFull(r.br, e[:]); err != nil {
				return nil, err
			}
			n = uint64(binary.BigEndian.Uint16(e[:]))
		case 127:
			var e [8]byte
			if _, err := io.ReadFull(r.br, e[:]); err != nil {
				return nil, err
			}
			n = binary.BigEndian.Uint64(e[:])
		}
		if n > 64<<20 {
			return nil, fmt.Errorf("frame of %d bytes", n)
		}
		if uint64(cap(r.buf)) < n {
			r.buf = make([]byte, n)
		}
		p := r.buf[:n]
		if _, err := io.ReadFull(r.br, p); err != nil {
			return nil, err
		}
		switch h[0] & 0x0F {
		case 0x1: // text (the server never fragments)
			return p, nil
		case 0x8:
			code := 1005
			if len(p) >= 2 {
				code = int(binary.BigEndian.Uint16(p))
			}
			_ = r.write(0x8, p[:min(len(p), 2)])
			return nil, errRawClosed{code}
		case 0x9:
			if err := r.write(0xA, p); err != nil {
				return nil, err
			}
		}
	}
}

func (r *rawConn) close() { _ = r.c.Close() }

// rawViewer is one -raw viewer of session id: it follows until ctx ends,
// resuming after a cut as a browser does (the cut is counted), and
// returns its chunk latencies. ready is called once its first replay is
// done; ends, when set, is told about turn ends.
func rawViewer(ctx context.Context, base, token, id string, batch, html bool, ready func(), ends chan<- struct{},
	delivered, cuts *atomic.Int64, errs *errorLog) []time.Duration {
	var samples []time.Duration
	since := int64(-1)
	for {
		err := rawFollow(ctx, base, token, id, since, batch, html, func(p []byte) {
			now := time.Now().UnixNano()
			rp := readRawPush(p, func(ns int64) { samples = append(samples, time.Duration(now-ns)) })
			if rp.replayDone {
				ready()
			}
			delivered.Add(int64(rp.events))
			since = max(since, rp.lastSeq)
			if rp.turnEnd && ends != nil {
				select {
				case ends <- struct{}{}:
				default:
				}
			}
		})
		if ctx.Err() != nil {
			return samples
		}
		if cl, ok := err.(errRawClosed); ok && cl.code == int(client.CloseSlowConsumer) {
			cuts.Add(1)
			continue
		}
		errs.add(fmt.Errorf("raw viewer of %s: %w", id, err))
		ready()
		return samples
	}
}

// rawFollow follows session id on one raw socket from since, calling
// frame with each push's payload, until ctx ends or the server closes
// it (errRawClosed). It resumes nothing itself.
func rawFollow(ctx context.Context, base, token, id string, since int64, batch, html bool, frame func([]byte)) error {
	rc, err := dialRaw(ctx, base, token)
	if err != nil {
		return err
	}
	defer rc.close()
	stop := context.AfterFunc(ctx, rc.close)
	defer stop()
	sub := fmt.Appendf(nil, `{"id":"s","op":"subscribe","session":%s,"since":%d,"batch":%t`, strconv.Quote(id), since, batch)
	if html {
		sub = append(sub, `,"render":"html"`...)
	}
	sub = append(sub, '}')
	if err := rc.write(0x1, sub); err != nil {
		return err
	}
	for {
		p, err := rc.next()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		frame(p)
	}
}

// Byte patterns a raw viewer looks for in a push.
var (
	rawEventsPrefix = []byte(`{"ch":"session/event`) // session/event and session/events
	rawReplayDone   = []byte(`{"ch":"replay/done"`)
	rawSeq          = []byte(`{"seq":`)
	rawTurnEnd      = []byte(`"type":"turn/end"`)
	rawStamp        = []byte(`"text":"t=`)
	rawTextDelta    = []byte(`"type":"text-delta"`)
)

// rawPush is what a raw viewer reads of one push.
type rawPush struct {
	replayDone bool
	events     int   // events in it
	lastSeq    int64 // the last one's seq (-1: none)
	turnEnd    bool
}

// readRawPush reads p without decoding it, calling stamp with the tick
// stamp of each text delta (a merged run of deltas: its first, the
// oldest). Events' data is JSON, so the patterns cannot occur inside
// their strings (a quote there is escaped).
func readRawPush(p []byte, stamp func(ns int64)) rawPush {
	out := rawPush{lastSeq: -1}
	if bytes.HasPrefix(p, rawReplayDone) {
		out.replayDone = true
		return out
	}
	if !bytes.HasPrefix(p, rawEventsPrefix) {
		return out
	}
	for rest := p; ; {
		i := bytes.Index(rest, rawSeq)
		if i < 0 {
			break
		}
		rest = rest[i+len(rawSeq):]
		out.events++
		if v, ok := leadingInt(rest); ok {
			out.lastSeq = v
		}
		// This event's bytes end where the next one starts.
		ev := rest
		if j := bytes.Index(rest, rawSeq); j >= 0 {
			ev = rest[:j]
		}
		if k := bytes.Index(ev, rawStamp); k >= 0 && bytes.Contains(ev, rawTextDelta) {
			if v, ok := leadingInt(ev[k+len(rawStamp):]); ok {
				stamp(v)
			}
		}
		out.turnEnd = out.turnEnd || bytes.Contains(ev, rawTurnEnd)
	}
	return out
}

// leadingInt parses the decimal digits b starts with.
func leadingInt(b []byte) (int64, bool) {
	var v int64
	n := 0
	for n < len(b) && n < 19 && b[n] >= '0' && b[n] <= '9' {
		v = 10*v + int64(b[n]-'0')
		n++
	}
	return v, n > 0
}
