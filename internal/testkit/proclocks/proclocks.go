//go:build linux

// Package proclocks reads the kernel's table of file locks, so tests can
// check that a process still holds SQLite's POSIX locks on its database
// (closing any descriptor of a file drops all of a process's POSIX locks
// on it; another process then believes it is alone).
package proclocks

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Table returns /proc/locks, for a failure message.
func Table() string {
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		return "(read /proc/locks: " + err.Error() + ")"
	}
	return string(b)
}

// Held counts the POSIX (fcntl) locks pid holds on path's inode.
// /proc/locks names a file as MAJ:MIN:INODE, the device numbers in hex:
//
//	3: POSIX  ADVISORY  READ 10827 fe:00:9978211 1073741826 1073742335
//
// Lines with "->" are requests still waiting, not locks held.
func Held(pid int, path string) (int, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return 0, err
	}
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		return 0, fmt.Errorf("read the kernel's lock table: %w", err)
	}
	dev := uint64(st.Dev)
	id := fmt.Sprintf("%02x:%02x:%d", unix.Major(dev), unix.Minor(dev), st.Ino)
	n := 0
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 || f[1] != "POSIX" || f[4] != strconv.Itoa(pid) || f[5] != id {
			continue
		}
		n++
	}
	return n, nil
}
