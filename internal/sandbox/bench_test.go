package sandbox_test

import (
	"os"
	"testing"

	"harness/internal/sandbox"
)

// BenchmarkCommand measures what confinement adds to a tool process: start
// `true` and wait for it, unconfined (off), under Landlock alone, and under
// bubblewrap and Landlock.
func BenchmarkCommand(b *testing.B) {
	for _, m := range []sandbox.Mode{sandbox.ModeOff, sandbox.ModeLandlock, sandbox.ModeBwrap} {
		b.Run(string(m), func(b *testing.B) {
			sb, err := sandbox.New(b.Context(), nil, sandbox.Config{Mode: m, NoCgroups: true})
			if err != nil {
				b.Skipf("!!! SKIPPING: mode %s: %v !!!", m, err)
			}
			ws := b.TempDir()
			if err := sb.Own(ws); err != nil {
				b.Fatal(err)
			}
			scratch := b.TempDir()
			if err := os.Chmod(scratch, 0o777); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				cmd, err := sb.Command(sandbox.Process{Path: "true", Workspace: ws, Scratch: scratch, Env: []string{"PATH=/usr/bin:/bin"}})
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
