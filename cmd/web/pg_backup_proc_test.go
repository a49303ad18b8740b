package main

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"harness/client"
	"harness/internal/testkit/poll"
)

// requirePGTools returns the paths of pg_dump and psql, or skips loudly.
func requirePGTools(t *testing.T) (dump, psql string) {
	t.Helper()
	if testing.Short() {
		t.Skip("spawns servers; skipped with -short")
	}
	if os.Getenv(pgDSNEnv) == "" {
		t.Skip("!!! SKIPPING: needs PostgreSQL; set " + pgDSNEnv + " (.ci/run does) !!!")
	}
	dump, err := exec.LookPath("pg_dump")
	if err != nil {
		t.Skip("!!! SKIPPING: pg_dump is not installed (Debian's postgresql-client) !!!")
	}
	psql, err = exec.LookPath("psql")
	if err != nil {
		t.Skip("!!! SKIPPING: psql is not installed (Debian's postgresql-client) !!!")
	}
	return dump, psql
}

// freshDatabase creates an empty PostgreSQL database, dropped when the
// test ends, and returns its DSN (the test server's, another dbname).
func freshDatabase(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv(pgDSNEnv)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "t_restore_" + hex.EncodeToString(b[:])
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec("DROP DATABASE " + name + " WITH (FORCE)"); err != nil {
			t.Errorf("drop database: %v", err)
		}
		_ = admin.Close()
	})
	return dsn + " dbname=" + name
}

// runProgram runs a program and fails the test with its output if it fails.
func runProgram(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return out
}

// turnsEnded waits until session id's stored log holds n turn/end events.
func turnsEnded(t *testing.T, c *client.Client, id string, n int) {
	t.Helper()
	poll.Eventually(t, "the turns to end", func() bool {
		ended := 0
		for _, e := range events(t, c, id) {
			if e.Type == "turn/end" {
				ended++
			}
		}
		return ended >= n
	}, poll.Within(60*time.Second))
}

// fileContent reads a workspace file through the REST API.
func fileContent(t *testing.T, base, tok, id, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet,
		base+"/api/sessions/"+id+"/files/content?path="+url.QueryEscape(path), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// The backup of docs/deploy.md ("Backup and restore (PostgreSQL)"): a
// server on a fresh schema runs two sessions (one writes a file into its
// workspace); while it runs, pg_dump dumps the schema and tar copies the
// workspaces. The server is killed and its workspaces are lost; they are
// unpacked again, the dump is loaded with psql into a new database, and a
// server started on that database and the same data directory lists the
// same sessions with exactly the same events, reads the file, and, once
// the dead server's leases carried by the dump have lapsed, runs a new
// turn that continues the restored log.
func TestPostgresBackupRestore(t *testing.T) {
	pgDump, psql := requirePGTools(t)
	t.Parallel()
	b := backends(t)[1].make(t)
	dir := t.TempDir()
	tok := b.token(t, dir)
	srv := startServer(t, dir, b.serverEnv()...)
	ctx := t.Context()
	c := client.New(srv.URL, client.WithToken(tok))
	var ids []string
	for i, prompt := range []string{"write: notes.txt\nkept across the restore", "long: 50"} {
		s, err := c.CreateSession(ctx, client.NewSession{Title: "backup " + string(rune('a'+i)), Mode: "auto"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.SendMessage(ctx, s.ID, prompt, "followup"); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
	}
	want := map[string][]client.Event{}
	for _, id := range ids {
		turnsEnded(t, c, id, 1)
		want[id] = events(t, c, id)
	}
	if st, body := fileContent(t, srv.URL, tok, ids[0], "notes.txt"); st != http.StatusOK || !strings.Contains(body, "kept across the restore") {
		t.Fatalf("the tool's file before the backup: %d %s", st, body)
	}

	// The backup, taken while the server runs.
	backup := t.TempDir()
	schema := strings.TrimPrefix(b.dsn[strings.LastIndex(b.dsn, "search_path="):], "search_path=")
	dumpFile := filepath.Join(backup, "harness.sql")
	runProgram(t, pgDump, "--no-owner", "--no-privileges", "--schema="+schema, "--file="+dumpFile, "--dbname="+os.Getenv(pgDSNEnv))
	wsTar := filepath.Join(backup, "workspaces.tar")
	runProgram(t, "tar", "-C", dir, "-cf", wsTar, "workspaces")

	// The disaster: the server dies and its workspaces are gone.
	srv.kill()
	if err := os.RemoveAll(filepath.Join(dir, "workspaces")); err != nil {
		t.Fatal(err)
	}

	// The restore: the dump into a new database, the workspaces at the
	// same path (sessions store their workspace's absolute path).
	restored := freshDatabase(t)
	runProgram(t, psql, "--quiet", "--no-psqlrc", "-v", "ON_ERROR_STOP=1", "--file="+dumpFile, "--dbname="+restored)
	runProgram(t, "tar", "-C", dir, "-xf", wsTar)
	env := []string{"HARNESS_DB_DRIVER=postgres", "HARNESS_DB_DSN=" + restored + " search_path=" + schema, "HARNESS_LEASE_TTL=" + pgLeaseTTL.String()}
	srv2 := startServer(t, dir, env...)
	c2 := client.New(srv2.URL, client.WithToken(tok))
	list, err := c2.ListSessions(ctx, client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range list.Sessions {
		got = append(got, s.ID)
	}
	if slices.Sort(got); !slices.Equal(got, slices.Sorted(slices.Values(ids))) {
		t.Fatalf("restored sessions %v, want %v", got, ids)
	}
	for _, id := range ids {
		if evs := events(t, c2, id); !reflect.DeepEqual(evs, want[id]) {
			a, _ := json.Marshal(want[id])
			b, _ := json.Marshal(evs)
			t.Errorf("session %s: restored events differ\nbefore %s\nafter  %s", id, a, b)
		}
	}
	if st, body := fileContent(t, srv2.URL, tok, ids[0], "notes.txt"); st != http.StatusOK || !strings.Contains(body, "kept across the restore") {
		t.Errorf("the tool's file after the restore: %d %s", st, body)
	}
	// The dump holds the dead server's leases: a send is refused until
	// they lapse (the lease TTL), then runs here.
	key := client.NewKey() // the same message however often it is tried
	poll.Eventually(t, "a send on the restored database", func() bool {
		_, err := c2.SendMessageKey(ctx, ids[1], "after the restore", "followup", key)
		return err == nil
	}, poll.Within(30*time.Second))
	turnsEnded(t, c2, ids[1], 2)
	evs := events(t, c2, ids[1])
	if !reflect.DeepEqual(evs[:len(want[ids[1]])], want[ids[1]]) || evs[len(evs)-1].Type != "turn/end" {
		t.Errorf("the new turn does not continue the restored log: %d events after %d", len(evs), len(want[ids[1]]))
	}
}
