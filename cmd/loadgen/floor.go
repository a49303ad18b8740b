package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// The floor is what this machine can do at all for a fan-out of the
// load's shape: a child process writes a size-byte message stamped with
// its send time to every one of sessions × viewers plain TCP connections,
// rate times a second, one goroutine per core; this process reads them
// with no WebSocket, no JSON, nothing but the read. The latency it
// reports is the least any server could reach here with its clients on
// the same machine, so a loadgen figure is read against it.

// floorReport is the -floor output.
type floorReport struct {
	Conns     int            `json:"conns"`
	Rate      int            `json:"messagesPerSecond"`
	Size      int            `json:"bytes"`
	Seconds   float64        `json:"seconds"`
	Latency   latencyFigures `json:"latencyMs"`
	ServerCPU float64        `json:"serverCpuCores"`
	ClientCPU float64        `json:"clientCpuCores"`
}

const floorSize = 256 // about a text delta's session/events frame

func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// floor measures the floor (the reading side) and prints it.
func floor(ctx context.Context, o options) error {
	conns := o.sessions * o.viewers
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, self, "-floor-serve", "-sessions", fmt.Sprint(conns), "-viewers", "1",
		"-rate", fmt.Sprint(o.rate), "-duration", o.duration.String())
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	lines := bufio.NewReader(out)
	addr, err := lines.ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		return fmt.Errorf("floor server: %w", err)
	}
	var (
		lat latencies
		wg  sync.WaitGroup
	)
	for range conns {
		c, err := net.Dial("tcp", addr[:len(addr)-1])
		if err != nil {
			_ = cmd.Process.Kill()
			return err
		}
		wg.Go(func() {
			defer c.Close()
			r := bufio.NewReader(c)
			buf := make([]byte, floorSize)
			var samples []time.Duration
			for {
				if _, err := io.ReadFull(r, buf); err != nil {
					break
				}
				samples = append(samples, time.Since(time.Unix(0, int64(binary.LittleEndian.Uint64(buf)))))
			}
			lat.add(samples)
		})
	}
	cpu0, start := cpuNow(), time.Now()
	wg.Wait()
	clientCPU, elapsed := cpuNow()-cpu0, time.Since(start)
	serverLine, _ := lines.ReadString('\n')
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("floor server: %w", err)
	}
	var serverCPU float64
	if _, err := fmt.Sscanf(serverLine, "cpu %g", &serverCPU); err != nil {
		return errors.New("floor server: no CPU figure")
	}
	rep := floorReport{Conns: conns, Rate: o.rate, Size: floorSize, Seconds: elapsed.Seconds(),
		Latency: lat.summary(true), ServerCPU: serverCPU / elapsed.Seconds(), ClientCPU: clientCPU.Seconds() / elapsed.Seconds()}
	rep.Latency.Source = "send stamp, plain TCP"
	if o.json {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	fmt.Printf("floor: %d connections x %d messages/s of %d bytes, %.1f s\n", rep.Conns, rep.Rate, rep.Size, rep.Seconds)
	fmt.Printf("latency ms: p50 %.1f  p95 %.1f  p99 %.1f  max %.1f\n", rep.Latency.P50, rep.Latency.P95, rep.Latency.P99, rep.Latency.Max)
	fmt.Printf("cpu cores: server %.2f  client %.2f\n", rep.ServerCPU, rep.ClientCPU)
	return nil
}

// floorServe is the floor's writing side: it prints its address, accepts
// o.sessions connections, writes for o.duration, closes them and prints
// its CPU seconds.
func floorServe(o options) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println(ln.Addr())
	conns := make([]net.Conn, 0, o.sessions)
	for len(conns) < o.sessions {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		conns = append(conns, c)
	}
	rate := max(o.rate, 1)
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	shares := min(runtime.GOMAXPROCS(0), len(conns))
	per := (len(conns) + shares - 1) / shares
	msg := make([]byte, floorSize)
	cpu0 := cpuNow()
	for end := time.Now().Add(o.duration); time.Now().Before(end); <-tick.C {
		binary.LittleEndian.PutUint64(msg, uint64(time.Now().UnixNano()))
		var wg sync.WaitGroup
		for k := 0; k < len(conns); k += per {
			wg.Go(func() {
				for _, c := range conns[k:min(len(conns), k+per)] {
					_, _ = c.Write(msg)
				}
			})
		}
		wg.Wait()
	}
	cpu := cpuNow() - cpu0
	for _, c := range conns {
		_ = c.Close()
	}
	fmt.Printf("cpu %g\n", cpu.Seconds())
	return nil
}
