package main

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/png"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"harness/client"
	"harness/internal/models"
)

// On a full disk an import and an image upload are refused with 507
// insufficient_storage and a message naming the cause, and leave nothing
// behind: no session, no workspace directory, no journal file, no stored
// image. Once space is back, both work.
func TestDiskFullRefusesImportAndUpload(t *testing.T) {
	t.Parallel()
	mnt := mountTmpfs(t, "64m")
	data := filepath.Join(mnt, "data")
	token := newToken(t, data)
	srv := startServer(t, data)
	c := client.New(srv.URL, client.WithToken(token))
	ctx := context.Background()
	s, err := c.CreateSession(ctx, client.NewSession{Title: "uploads here"})
	if err != nil {
		t.Fatal(err)
	}
	log, err := os.ReadFile(bigCorpusLog)
	if err != nil {
		t.Fatal(err)
	}
	// Incompressible pixels: the image needs megabytes of new pages.
	img := noisePNG(t, 900, 900)

	filler := filepath.Join(mnt, "filler")
	_ = exec.Command("dd", "if=/dev/zero", "of="+filler, "bs=1M", "count=100").Run()
	_, err = c.Import(ctx, bytes.NewReader(log))
	wantDiskFull(t, "import", err)
	_, err = c.UploadImage(ctx, s.ID, "noise.png", img)
	wantDiskFull(t, "upload", err)
	if code, err := httpGet(srv.URL + "/healthz"); err != nil || code != 200 {
		t.Fatalf("server stopped serving on a full disk: %d %v", code, err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}

	// Nothing was left behind.
	ids := sessionIDs(t, c)
	if len(ids) != 1 || ids[0] != s.ID {
		t.Fatalf("sessions after the refused import: %v, want only %s", ids, s.ID)
	}
	noImportLeftovers(t, data, ids)
	_ = srv.cmd.Process.Signal(syscall.SIGTERM)
	if err, ok := srv.exitErr(30 * time.Second); !ok || err != nil {
		t.Fatalf("server stop: %v (exited %v)", err, ok)
	}
	if n := countRows(t, data, &models.Attachment{}); n != 0 {
		t.Fatalf("%d images stored by the refused upload", n)
	}

	// With space back, both work.
	srv = startServer(t, data)
	c = client.New(srv.URL, client.WithToken(token))
	if _, err := c.Import(ctx, bytes.NewReader(log)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UploadImage(ctx, s.ID, "noise.png", img); err != nil {
		t.Fatal(err)
	}
}

func wantDiskFull(t *testing.T, what string, err error) {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) || e.Status != 507 || e.Code != "insufficient_storage" || !strings.Contains(e.Message, "disk is full") {
		t.Fatalf("%s on a full disk: %v, want 507 insufficient_storage saying the disk is full", what, err)
	}
}

// noisePNG is a w×h PNG of random pixels (it does not compress).
func noisePNG(t *testing.T, w, h int) []byte {
	t.Helper()
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range m.Pix {
		m.Pix[i] = byte(rng.Uint32())
	}
	var b bytes.Buffer
	if err := png.Encode(&b, m); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// countRows counts a table's rows in the database of a stopped server on
// dir.
func countRows(t *testing.T, dir string, model any) int64 {
	t.Helper()
	db, err := models.Open(context.Background(), nil, models.Config{DSN: filepath.Join(dir, "harness.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int64
	if err := db.R.Model(model).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}
