package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"harness/client"
)

// prevEnv names the previous release's binary for TestRollingUpgrade.
const prevEnv = "HARNESS_TEST_PREVIOUS_BINARY"

// startBinary starts the server binary bin (another build) on dir, as
// startServer starts this one.
func startBinary(t *testing.T, bin, dir string, env ...string) *serverProc {
	t.Helper()
	// The wrapper drops the test binary's arguments, which bin would
	// refuse as flags.
	wrap, err := json.Marshal([]string{"/bin/sh", "-c", `exec "$0"`, bin})
	if err != nil {
		t.Fatal(err)
	}
	return startServer(t, dir, append(slices.Clone(env), "HARNESS_TEST_WRAP="+string(wrap))...)
}

// stop sends SIGTERM and waits for a clean exit: the replica releases
// its leases and unregisters, as in a rolling restart.
func (p *serverProc) stop(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	err, exited := p.exitErr(60 * time.Second)
	if !exited || err != nil {
		t.Fatalf("SIGTERM: exited %v, %v\n%s", exited, err, p.logs)
	}
}

// A rolling upgrade on one PostgreSQL schema, from the binary
// HARNESS_TEST_PREVIOUS_BINARY names (the previous release) to this
// build. The old replica makes the schema and runs a session; the new
// one joins while it runs (migrating the schema), reads the old one's
// session, sends to it (run by its owner, the old one) and runs one of
// its own that the old one reads. The old replica then restarts on the
// migrated schema (a replica restarted mid-upgrade, or a rollback) and
// still reads and runs both sessions, and the new one restarts after it.
// No release has been made yet, so this skips unless the variable is set
// (docs/deploy.md, "Upgrades", says how to build an older binary).
func TestRollingUpgrade(t *testing.T) {
	prev := os.Getenv(prevEnv)
	if prev == "" {
		t.Skip("!!! SKIPPING: no previous release binary; set " + prevEnv + " to one (docs/deploy.md, \"Upgrades\") !!!")
	}
	if os.Getenv(pgDSNEnv) == "" {
		t.Skip("!!! SKIPPING: replicas need PostgreSQL; set " + pgDSNEnv + " !!!")
	}
	t.Parallel()
	b := backends(t)[1].make(t)
	dir := t.TempDir()
	env := append(slices.Clone(b.env), "HARNESS_LEASE_TTL=2s")

	// The account, made by the old release's CLI: the schema is its own.
	cli := func(stdin string, args ...string) string {
		cmd := exec.Command(prev, args...)
		cmd.Env = append(os.Environ(), append([]string{"HARNESS_DATA_DIR=" + dir}, b.env...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", prev, args, err, out)
		}
		return string(out)
	}
	cli("upgrade-password\n", "user", "add", "upgrade", "--admin")
	var tok string
	for _, f := range strings.Fields(cli("", "token", "create", "upgrade")) {
		if strings.HasPrefix(f, "hrn_") {
			tok = f
		}
	}
	if tok == "" {
		t.Fatal("no token from the old CLI")
	}

	old := startBinary(t, prev, dir, append(slices.Clone(env), "HARNESS_REPLICA_ID=old")...)
	co := client.New(old.URL, client.WithToken(tok))
	ctx := t.Context()
	s1, err := co.CreateSession(ctx, client.NewSession{Title: "made by the old release", Mode: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := co.SendMessage(ctx, s1.ID, "long: 20", "followup"); err != nil {
		t.Fatal(err)
	}
	turnsEnded(t, co, s1.ID, 1)

	// The new build joins while the old one runs.
	nw := startServer(t, dir, append(slices.Clone(env), "HARNESS_REPLICA_ID=new")...)
	cn := client.New(nw.URL, client.WithToken(tok))
	if a, b := events(t, co, s1.ID), events(t, cn, s1.ID); !reflect.DeepEqual(a, b) {
		t.Fatalf("the new replica reads the old one's session differently:\nold %d events, new %d", len(a), len(b))
	}
	if _, err := cn.SendMessage(ctx, s1.ID, "long: 20", "followup"); err != nil {
		t.Fatalf("a send through the new replica to the old one's session: %v", err)
	}
	turnsEnded(t, co, s1.ID, 2)
	s2, err := cn.CreateSession(ctx, client.NewSession{Title: "made by the new build", Mode: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cn.SendMessage(ctx, s2.ID, "long: 20", "followup"); err != nil {
		t.Fatal(err)
	}
	turnsEnded(t, cn, s2.ID, 1)
	if a, b := events(t, cn, s2.ID), events(t, co, s2.ID); !reflect.DeepEqual(a, b) {
		t.Fatalf("the old replica reads the new one's session differently:\nnew %d events, old %d", len(a), len(b))
	}

	// The old release restarts on the migrated schema, then the new one.
	old.stop(t)
	old = startBinary(t, prev, dir, append(slices.Clone(env), "HARNESS_REPLICA_ID=old")...)
	co = client.New(old.URL, client.WithToken(tok))
	for _, id := range []string{s1.ID, s2.ID} {
		if _, err := co.SendMessage(ctx, id, "long: 20", "followup"); err != nil {
			t.Fatalf("a send through the restarted old replica: %v", err)
		}
	}
	turnsEnded(t, co, s1.ID, 3)
	turnsEnded(t, co, s2.ID, 2)
	nw.stop(t)
	nw = startServer(t, dir, append(slices.Clone(env), "HARNESS_REPLICA_ID=new")...)
	cn = client.New(nw.URL, client.WithToken(tok))
	for _, id := range []string{s1.ID, s2.ID} {
		if a, b := events(t, co, id), events(t, cn, id); !reflect.DeepEqual(a, b) {
			t.Errorf("session %s reads differently on the old and the new replica after both restarted", id)
		}
	}
	for _, p := range []*serverProc{old, nw} {
		if strings.Contains(p.logs.String(), "level=ERROR") {
			t.Errorf("a replica logged an error:\n%s", p.logs)
		}
	}
}
