//go:build !linux

package ws

import "syscall"

// Elsewhere every frame goes through the connection's writer goroutine.
const canTryWrite = false

func tryWritev(syscall.RawConn, []byte, []byte) (int, error) { return 0, nil }
