package models

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Helper processes: the test binary re-executes itself with these variables
// set to play a second server process.
const (
	helperModeEnv = "HARNESS_MODELS_HELPER" // "crash" or "hold"
	helperDBEnv   = "HARNESS_MODELS_HELPER_DB"
)

func TestMain(m *testing.M) {
	switch os.Getenv(helperModeEnv) {
	case "":
		os.Exit(m.Run())
	case "crash":
		os.Exit(crashHelper(os.Getenv(helperDBEnv)))
	case "hold":
		os.Exit(holdHelper(os.Getenv(helperDBEnv)))
	default:
		fmt.Fprintln(os.Stderr, "unknown helper mode")
		os.Exit(2)
	}
}

const crashSession = "crash-session"

// crashHelper appends and flushes flushedCount events, says so, then keeps
// appending without flushing until it is killed.
func crashHelper(path string) int {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	db, err := Open(ctx, log, Config{DSN: path})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	w := NewWriter(log, db, WriterOptions{MaxDelay: 5 * time.Millisecond, MaxBatch: 200})
	s := NewStore(log, db, w)
	if err := s.CreateSession(ctx, &Session{ID: crashSession, OwnerID: "u"}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	const flushedCount = 1000
	var seq int64
	for ; seq < flushedCount; seq++ {
		w.Enqueue(crashSession, variedEvent(crashSession, seq))
	}
	if err := w.Flush(ctx, crashSession); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("flushed %d\n", flushedCount)
	for ; ; seq++ {
		w.Enqueue(crashSession, variedEvent(crashSession, seq))
		if seq%50 == 0 {
			time.Sleep(time.Millisecond) // shapes load: keeps the queue bounded
		}
	}
}

// holdHelper opens the database and holds it until stdin closes.
func holdHelper(path string) int {
	db, err := Open(context.Background(), slog.New(slog.DiscardHandler), Config{DSN: path})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer db.Close()
	fmt.Println("opened")
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// startHelper runs the test binary in a helper mode and returns it once it
// printed a line starting with ready, plus that line.
func startHelper(t *testing.T, mode, path, ready string) (*exec.Cmd, io.WriteCloser, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperModeEnv+"="+mode, helperDBEnv+"="+path)
	cmd.Stderr = testWriter{t}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), ready) {
				lines <- sc.Text()
				break
			}
		}
		close(lines)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case line, ok := <-lines:
		if !ok {
			t.Fatalf("helper %s exited before saying %q", mode, ready)
		}
		return cmd, stdin, line
	case <-time.After(30 * time.Second):
		t.Fatalf("helper %s did not say %q", mode, ready)
	}
	return nil, nil, ""
}
