package egress

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"time"
)

// SOCKS5 replies (RFC 1928).
const (
	socksOK           = 0x00
	socksNotAllowed   = 0x02 // connection not allowed by ruleset
	socksRefused      = 0x05
	socksCmdUnsupp    = 0x07
	socksAddrUnsupp   = 0x08
	socksNoAuth       = 0x00
	socksNoAcceptable = 0xff
)

// serveSOCKS serves one SOCKS5 CONNECT without authentication (the socket
// is the session's own); the target name is resolved here, under the
// guard (socks5h).
func (p *Proxy) serveSOCKS(e *entry, c *conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	var hdr [2]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(c, methods); err != nil {
		return
	}
	if !slices.Contains(methods, socksNoAuth) {
		_, _ = c.Write([]byte{5, socksNoAcceptable})
		return
	}
	if _, err := c.Write([]byte{5, socksNoAuth}); err != nil {
		return
	}
	var req [4]byte // VER CMD RSV ATYP
	if _, err := io.ReadFull(c, req[:]); err != nil {
		return
	}
	reply := func(code byte) { _, _ = c.Write([]byte{5, code, 0, 1, 0, 0, 0, 0, 0, 0}) }
	if req[1] != 1 { // CONNECT only
		reply(socksCmdUnsupp)
		return
	}
	var host string
	switch req[3] {
	case 1, 4:
		size := 4
		if req[3] == 4 {
			size = 16
		}
		b := make([]byte, size)
		if _, err := io.ReadFull(c, b); err != nil {
			return
		}
		ip, _ := netip.AddrFromSlice(b)
		host = ip.String()
	case 3:
		var n [1]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return
		}
		b := make([]byte, n[0])
		if _, err := io.ReadFull(c, b); err != nil {
			return
		}
		host = string(b)
	default:
		reply(socksAddrUnsupp)
		return
	}
	var pb [2]byte
	if _, err := io.ReadFull(c, pb[:]); err != nil {
		return
	}
	port := binary.BigEndian.Uint16(pb[:])
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	up, err := p.dial(ctx, e, net.JoinHostPort(host, strconv.Itoa(int(port))))
	cancel()
	if err != nil {
		var rf *Refusal
		switch {
		case errors.As(err, &rf):
			reply(socksNotAllowed)
		default:
			reply(socksRefused)
		}
		return
	}
	reply(socksOK)
	_ = c.SetDeadline(time.Time{})
	pipe(c, up, IdleTimeout)
}
