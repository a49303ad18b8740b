package sandbox

import (
	"fmt"
	"io"
	"net"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// A network-on command has a network namespace of its own, with only
// loopback: its way out is the server's egress proxy (internal/egress),
// whose UNIX socket is in the sandbox. The helper listens on a loopback
// port inside the namespace and hands the listener to a re-execution of
// this binary as the bridge, which copies each connection to the socket;
// the program gets the proxy variables pointing at that port. The bridge
// ends with the command: it watches a pidfd of the helper, which becomes
// the command (the parent-death signal would not do: Landlock's signal
// scope stops the command's death signal to a process outside its domain),
// and under bubblewrap the PID namespace ends with the command too.

// bridgeArg marks a re-execution as the bridge: argv is [exe, bridgeArg,
// socket, uid, gid]; the listener is fd 3, a pidfd of the command fd 4.
const bridgeArg = "__harness-sandbox-bridge"

// egressInside is where the proxy socket is mounted under bubblewrap.
const egressInside = "/run/harness/egress.sock"

// holdByte opens the bridge's hold connection, which keeps the server's
// socket open while the command runs (egress.holdByte).
const holdByte = 0x00

// startBridge listens on a loopback port and starts the bridge to socket;
// it returns the proxy variables for the program.
func startBridge(socket string, uid, gid int) ([]string, error) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen on loopback: %w", err)
	}
	defer ln.Close()
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer null.Close()
	pidfd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		return nil, fmt.Errorf("pidfd: %w", err)
	}
	self := os.NewFile(uintptr(pidfd), "pidfd")
	defer self.Close()
	args := []string{"sandbox-bridge", bridgeArg, socket, strconv.Itoa(uid), strconv.Itoa(gid)}
	proc, err := os.StartProcess("/proc/self/exe", args, &os.ProcAttr{
		Files: []*os.File{null, null, null, f, self},
		Env:   []string{},
	})
	if err != nil {
		return nil, fmt.Errorf("start the network bridge: %w", err)
	}
	_ = proc.Release()
	u := "http://" + ln.Addr().String()
	// localhost is the sandbox's own loopback (servers the command starts);
	// 127.0.0.1 goes through the proxy, to a host service the admin
	// allow-listed.
	return []string{
		"HTTP_PROXY=" + u, "HTTPS_PROXY=" + u, "http_proxy=" + u, "https_proxy=" + u,
		"ALL_PROXY=socks5h://" + ln.Addr().String(), "all_proxy=socks5h://" + ln.Addr().String(),
		"NO_PROXY=localhost", "no_proxy=localhost",
	}, nil
}

// bridgeMain serves the bridge; it returns only on failure.
func bridgeMain(args []string) int {
	if len(args) != 3 {
		return exitSetup
	}
	socket := args[0]
	uid, err1 := strconv.Atoi(args[1])
	gid, err2 := strconv.Atoi(args[2])
	if err1 != nil || err2 != nil {
		return exitSetup
	}
	go func() {
		// The pidfd reads as ready once the command has exited.
		fds := []unix.PollFd{{Fd: 4, Events: unix.POLLIN}}
		for {
			if _, err := unix.Poll(fds, -1); err != unix.EINTR {
				os.Exit(0)
			}
		}
	}()
	ln, err := net.FileListener(os.NewFile(3, "bridge"))
	if err != nil {
		return exitSetup
	}
	if err := dropIdentity(uid, gid); err != nil {
		return exitSetup
	}
	if hold, err := net.Dial("unix", socket); err == nil {
		_, _ = hold.Write([]byte{holdByte})
		defer hold.Close()
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			return exitSetup
		}
		go bridgeConn(c, socket)
	}
}

// bridgeConn copies one connection to the proxy socket and back.
func bridgeConn(c net.Conn, socket string) {
	defer c.Close()
	up, err := net.Dial("unix", socket)
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(up, c)
		_ = up.(*net.UnixConn).CloseWrite()
		close(done)
	}()
	_, _ = io.Copy(c, up)
	_ = c.(*net.TCPConn).CloseWrite()
	<-done
}

// loopbackUp brings lo up in a new network namespace (Landlock-only mode;
// bubblewrap does it itself). The helper holds CAP_NET_ADMIN over the
// namespace it owns.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("lo flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	return nil
}
