package ws

import (
	"syscall"

	"golang.org/x/sys/unix"
)

const canTryWrite = true

// tryWritev writes hdr and payload with one non-blocking writev; n is
// what the socket took (0 when it would block).
func tryWritev(raw syscall.RawConn, hdr, payload []byte) (n int, err error) {
	iov := [2][]byte{hdr, payload}
	cerr := raw.Write(func(fd uintptr) bool {
		n, err = unix.Writev(int(fd), iov[:])
		return true // never wait: a full socket is the writer's to wait on
	})
	if cerr != nil {
		return 0, cerr
	}
	if err == unix.EAGAIN || err == unix.EINTR {
		return max(n, 0), nil
	}
	return max(n, 0), err
}
