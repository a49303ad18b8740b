package ws

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

const canTryWrite = true

// directWriter does a wire's non-blocking writev. Its state lives in the
// wire (used under wire.mu) and its callback is bound once, so frames
// written from the fan-out allocate nothing: a closure over locals, or
// unix.Writev's iovec slice, cost about five allocations per frame, at
// 50,000 frames a second the server's main source of garbage.
type directWriter struct {
	raw syscall.RawConn
	hdr [maxDirect][maxHeader]byte
	iov [2 * maxDirect]unix.Iovec
	cnt int
	n   int
	err error
	fn  func(fd uintptr) bool
}

func (d *directWriter) init(raw syscall.RawConn) {
	d.raw = raw
	d.fn = d.write
}

// writev writes payloads (at most maxDirect) as frames with one
// non-blocking writev; n is the bytes the socket took (0 when it would
// block).
func (d *directWriter) writev(payloads [][]byte) (n int, err error) {
	d.cnt = 0
	for i, p := range payloads[:min(len(payloads), maxDirect)] {
		hdr := frameHeader(d.hdr[i][:0], len(p))
		d.iov[d.cnt].Base = &hdr[0]
		d.iov[d.cnt].SetLen(len(hdr))
		d.cnt++
		if len(p) > 0 {
			d.iov[d.cnt].Base = &p[0]
			d.iov[d.cnt].SetLen(len(p))
			d.cnt++
		}
	}
	cerr := d.raw.Write(d.fn)
	n, err = d.n, d.err
	clear(d.iov[:d.cnt]) // keep no frame alive
	d.err = nil
	if cerr != nil {
		return 0, cerr
	}
	if err == unix.EAGAIN || err == unix.EINTR {
		return 0, nil
	}
	return max(n, 0), err
}

func (d *directWriter) write(fd uintptr) bool {
	r, _, e := unix.Syscall(unix.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&d.iov[0])), uintptr(d.cnt))
	d.n, d.err = int(r), nil
	if e != 0 {
		d.n, d.err = 0, e
	}
	return true // never wait: a full socket is the writer's to wait on
}
