package ws

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"testing"
)

func TestFrameHeader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		n    int
		want []byte
	}{
		{0, []byte{0x81, 0}},
		{125, []byte{0x81, 125}},
		{126, []byte{0x81, 126, 0, 126}},
		{0xFFFF, []byte{0x81, 126, 0xFF, 0xFF}},
		{0x10000, []byte{0x81, 127, 0, 0, 0, 0, 0, 1, 0, 0}},
	}
	for _, tt := range tests {
		if got := frameHeader(nil, tt.n); !bytes.Equal(got, tt.want) {
			t.Errorf("frameHeader(%d) = % x, want % x", tt.n, got, tt.want)
		}
	}
}

// readFrame reads one unmasked server frame (RFC 6455 5.2).
func readFrame(r *bufio.Reader) (opcode byte, payload []byte, err error) {
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := uint64(h[1] & 0x7F)
	switch n {
	case 126:
		var b [2]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return 0, nil, err
		}
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return 0, nil, err
		}
		n = binary.BigEndian.Uint64(b[:])
	}
	payload = make([]byte, n)
	_, err = io.ReadFull(r, payload)
	return h[0] & 0x0F, payload, err
}

// tcpPair is a connected loopback pair with small kernel buffers, so a
// peer that does not read fills them quickly.
func tcpPair(t *testing.T) (server, client *net.TCPConn) {
	t.Helper()
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.DialTCP("tcp", nil, ln.Addr().(*net.TCPAddr))
	if err != nil {
		t.Fatal(err)
	}
	server, err = ln.AcceptTCP()
	if err != nil {
		t.Fatal(err)
	}
	_ = client.SetReadBuffer(16 << 10)
	_ = server.SetWriteBuffer(16 << 10)
	t.Cleanup(func() { _ = server.Close(); _ = client.Close() })
	return server, client
}

// Frames written without waiting go out whole and in order even when the
// socket takes only part of one: the rest waits on the wire, later direct
// writes are refused until it is sent, and a control frame the library
// writes meanwhile comes after it, never inside it.
func TestWireKeepsFramesWholeAcrossPartialWrites(t *testing.T) {
	t.Parallel()
	if !canTryWrite {
		t.Skip("no non-blocking writes on this platform: every frame goes through the writer")
	}
	server, client := tcpPair(t)
	w := newWire(server)
	wc := wireConn{Conn: server, w: w}

	// Three frames per write, so the socket fills inside a write too.
	var written [][]byte
	partial := false
	for i := 0; !partial; i++ {
		var payloads [][]byte
		for k := range 3 {
			payloads = append(payloads, bytes.Repeat([]byte{byte('a' + (3*i+k)%26)}, 3000+i+k*700))
		}
		sent, part := w.tryFrames(payloads)
		if sent == 0 && !part {
			t.Fatalf("write %d: nothing written though the last frames went out whole", i)
		}
		if part {
			sent++
		}
		written = append(written, payloads[:sent]...)
		partial = part
		if i > 10000 {
			t.Fatal("the socket never filled")
		}
	}
	if sent, part := w.tryFrames([][]byte{[]byte("next")}); sent > 0 || part {
		t.Fatal("a direct write went out while the rest of a frame waited")
	}
	// The library's pong, written while the rest waits.
	pong := []byte{0x8A, 2, 'h', 'i'}
	done := make(chan error, 1)
	go func() {
		_, err := wc.Write(pong)
		done <- err
	}()
	r := bufio.NewReader(client)
	for i, want := range written {
		op, got, err := readFrame(r)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if op != 1 || !bytes.Equal(got, want) {
			t.Fatalf("frame %d: opcode %d, %d bytes, want a text frame of %d", i, op, len(got), len(want))
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if op, got, err := readFrame(r); err != nil || op != 0xA || string(got) != "hi" {
		t.Fatalf("after the frames: opcode %d %q %v, want the pong", op, got, err)
	}
	// The wire is clear again: a frame goes out directly.
	if sent, part := w.tryFrames([][]byte{[]byte("after")}); sent != 1 || part {
		t.Fatalf("direct write after the rest went out: sent %d partial %v", sent, part)
	}
	if _, got, err := readFrame(r); err != nil || string(got) != "after" {
		t.Fatalf("last frame %q %v", got, err)
	}
}

// BenchmarkTryFrame is one live frame written straight from the fan-out
// to a loopback socket whose peer drains it: the per-frame cost of a
// viewer that keeps up, system call included (allocs/op should be 0).
//
//	go test -run '^$' -bench TryFrame -benchmem ./internal/ws
func BenchmarkTryFrame(b *testing.B) {
	if !canTryWrite {
		b.Skip("no non-blocking writes on this platform")
	}
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	client, err := net.DialTCP("tcp", nil, ln.Addr().(*net.TCPAddr))
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	server, err := ln.AcceptTCP()
	if err != nil {
		b.Fatal(err)
	}
	defer server.Close()
	go func() { _, _ = io.Copy(io.Discard, client) }()
	w := newWire(server)
	payload := bytes.Repeat([]byte("x"), 240) // a text delta's frame
	payloads := [1][]byte{payload}
	b.ReportAllocs()
	for b.Loop() {
		if sent, partial := w.tryFrames(payloads[:]); partial {
			b.Fatal("partial write to a drained socket")
		} else if sent == 0 {
			if err := w.writeFrame(payload); err != nil {
				b.Fatal(err)
			}
		}
	}
}
