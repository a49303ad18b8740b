package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"harness/internal/app"
	"harness/internal/auth"
	"harness/internal/config"
	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/ws"
)

// serve is the spawned server: the real app with the tick provider as its
// default route. It prints "token <t>" and "listening <url>" on stdout.
func serve(ctx context.Context, o options) error {
	cfg, err := config.Load([]string{"-addr", o.addr, "-data", o.dataDir, "-log-level", "warn"}, os.Getenv)
	if err != nil {
		return err
	}
	var every time.Duration
	if o.rate > 0 {
		every = time.Second / time.Duration(o.rate)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	a, err := app.New(ctx, log, cfg, app.Options{
		Getenv:    func(string) string { return "" },
		Providers: []llm.Provider{fake.Tick{Name: "tick", Every: every, Chunks: o.chunks}},
		// One user holds every viewer's socket: the per-user cap (64)
		// would refuse any load beyond it.
		WS: ws.Options{MaxSockets: 1 << 20},
	})
	if err != nil {
		return err
	}
	// The listener before Start, as cmd/web does: nothing touches a
	// session before the process holds its port and identity.
	ln, err := a.Listen()
	if err != nil {
		return err
	}
	// Replicas share the database: the first one creates the user.
	if _, err := a.Auth.CreateUser(ctx, "load", "load-password-1", true); err != nil && !errors.Is(err, auth.ErrExists) {
		return err
	}
	if err := a.Start(ctx); err != nil {
		return err
	}
	tok, err := a.Auth.CreateToken(ctx, "load", "loadgen")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: a.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	fmt.Printf("token %s\nlistening http://%s\n", tok, ln.Addr())
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return errors.Join(srv.Shutdown(sctx), a.Close(sctx))
}

// spawned is a server child process.
type spawned struct {
	cmd     *exec.Cmd
	url     string
	token   string
	started time.Time
	ready   time.Duration // process start to /readyz answering
	dataDir string
	tmp     bool
}

// spawn starts this binary as a server and waits until it is ready.
func spawn(ctx context.Context, o options, env ...string) (*spawned, error) {
	s := &spawned{dataDir: o.dataDir}
	if s.dataDir == "" {
		dir, err := os.MkdirTemp("", "harness-loadgen-")
		if err != nil {
			return nil, err
		}
		s.dataDir, s.tmp = dir, true
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := []string{"-serve", "-data", s.dataDir, "-rate", fmt.Sprint(o.rate), "-chunks", fmt.Sprint(o.chunks)}
	if o.cpuProf != "" {
		args = append(args, "-cpuprofile", o.cpuProf+".server")
	}
	s.cmd = exec.Command(self, args...)
	s.cmd.Env = append(os.Environ(), env...)
	s.cmd.Stderr = os.Stderr
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	s.started = time.Now()
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	lines := bufio.NewScanner(out)
	for s.url == "" && lines.Scan() {
		line := lines.Text()
		if v, ok := strings.CutPrefix(line, "token "); ok {
			s.token = v
		}
		if v, ok := strings.CutPrefix(line, "listening "); ok {
			s.url = v
		}
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	if s.url == "" || s.token == "" {
		_ = s.stop()
		return nil, errors.New("the spawned server did not start (see its log above)")
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := http.Get(s.url + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			_ = s.stop()
			return nil, errors.New("the spawned server never became ready")
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.ready = time.Since(s.started)
	return s, nil
}

func (s *spawned) stop() error {
	if s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- s.cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = s.cmd.Process.Kill()
			<-done
		}
	}
	if s.tmp {
		return os.RemoveAll(filepath.Clean(s.dataDir))
	}
	return nil
}

// spawnReplicas starts o.replicas servers (on o.dbDSN when more than one,
// sharing one data directory, so one secret key and the workspaces), one
// after the other. stop stops them all and removes a temporary directory.
func spawnReplicas(ctx context.Context, o options) (_ []*spawned, stop func(), err error) {
	if o.replicas <= 1 && o.dbDSN == "" {
		s, err := spawn(ctx, o)
		if err != nil {
			return nil, nil, err
		}
		return []*spawned{s}, func() { _ = s.stop() }, nil
	}
	if o.dbDSN == "" {
		return nil, nil, errors.New("-replicas needs -db-dsn (replicas share a PostgreSQL database)")
	}
	o.replicas = max(o.replicas, 1)
	tmp := ""
	if o.dataDir == "" {
		if tmp, err = os.MkdirTemp("", "harness-loadgen-"); err != nil {
			return nil, nil, err
		}
		o.dataDir = tmp
	}
	var out []*spawned
	stop = func() {
		for _, p := range out {
			_ = p.stop()
		}
		if tmp != "" {
			_ = os.RemoveAll(tmp)
		}
	}
	for k := range o.replicas {
		s, err := spawn(ctx, o, "HARNESS_DB_DRIVER=postgres", "HARNESS_DB_DSN="+o.dbDSN, fmt.Sprintf("HARNESS_REPLICA_ID=loadgen-%d", k))
		if err != nil {
			stop()
			return nil, nil, err
		}
		out = append(out, s)
	}
	return out, stop, nil
}
