package sandbox_test

import (
	"os"
	"path/filepath"
	"testing"

	"harness/internal/egress"
	"harness/internal/sandbox"
)

// BenchmarkCommand measures what confinement adds to a tool process: start
// `true` and wait for it, unconfined (off), under Landlock alone, and under
// bubblewrap and Landlock; "+net" with the network on (a network namespace
// of its own, the bridge to the egress proxy started and ended).
func BenchmarkCommand(b *testing.B) {
	for _, tc := range []struct {
		mode sandbox.Mode
		net  bool
	}{{sandbox.ModeOff, false}, {sandbox.ModeLandlock, false}, {sandbox.ModeBwrap, false}, {sandbox.ModeLandlock, true}, {sandbox.ModeBwrap, true}} {
		name := string(tc.mode)
		if tc.net {
			name += "+net"
		}
		b.Run(name, func(b *testing.B) {
			sb, err := sandbox.New(b.Context(), nil, sandbox.Config{Mode: tc.mode, NoCgroups: true})
			if err != nil {
				b.Skipf("!!! SKIPPING: mode %s: %v !!!", tc.mode, err)
			}
			ws := b.TempDir()
			if err := sb.Own(ws); err != nil {
				b.Fatal(err)
			}
			scratch := b.TempDir()
			if err := os.Chmod(scratch, 0o777); err != nil {
				b.Fatal(err)
			}
			sock := ""
			if tc.net {
				dir := b.TempDir()
				for _, d := range []string{filepath.Dir(dir), dir} {
					if err := os.Chmod(d, 0o755); err != nil {
						b.Fatal(err)
					}
				}
				proxy, err := egress.NewProxy(egress.ProxyDeps{Dir: filepath.Join(dir, "egress")})
				if err != nil {
					b.Fatal(err)
				}
				defer proxy.Close()
				if sock, err = proxy.Socket(b.Context(), "s", nil); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				cmd, err := sb.Command(sandbox.Process{Path: "true", Workspace: ws, Scratch: scratch, Egress: sock, Env: []string{"PATH=/usr/bin:/bin"}})
				if err != nil {
					b.Fatal(err)
				}
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
