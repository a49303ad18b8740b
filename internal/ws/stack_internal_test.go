package ws

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"harness/internal/auth"
	"harness/internal/driver"
	"harness/internal/driverstore"
	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/models"
	"harness/internal/sandbox/sandboxtest"
	"harness/internal/service"
	"harness/internal/tools"
	"harness/internal/tools/builtin"
	"harness/internal/workspace"
)

// stack is a hub on real parts without HTTP: SQLite, the writer, the
// manager with the offline demo model, the service.
type stack struct {
	hub     *Hub
	svc     *service.Service
	auth    *auth.Service
	owner   *auth.Actor
	viewer  *auth.Actor
	session string
}

func newStack(tb testing.TB, opts Options) *stack {
	tb.Helper()
	ctx := context.Background()
	dir := tb.TempDir()
	log := slog.New(slog.DiscardHandler)
	db, err := models.Open(ctx, log, models.Config{DSN: filepath.Join(dir, "h.db")})
	if err != nil {
		tb.Fatal(err)
	}
	w := models.NewWriter(log, db, models.WriterOptions{})
	st := models.NewStore(log, db, w)
	as := auth.NewService(log, models.NewAuthStore(db), auth.Options{BcryptCost: bcrypt.MinCost})
	demo, stop, err := fake.StartDemo(ctx, log, fake.WithChunkDelay(0))
	if err != nil {
		tb.Fatal(err)
	}
	reg := llm.NewRegistry()
	if err := reg.Register(demo); err != nil {
		tb.Fatal(err)
	}
	treg := tools.NewRegistry()
	if err := builtin.Register(treg, builtin.Options{}); err != nil {
		tb.Fatal(err)
	}
	wsm, err := workspace.New(workspace.Deps{Sandbox: sandboxtest.Shared(tb), DataDir: dir})
	if err != nil {
		tb.Fatal(err)
	}
	mgr := driver.NewManager(log, driverstore.Store{S: st}, driver.Options{Providers: reg, Tools: treg, Confiner: wsm})
	svc := service.New(service.Deps{Log: log, Store: st, Manager: mgr, Meta: driverstore.Store{S: st}, Auth: as, Workspaces: wsm})
	h := New(Deps{Log: log, Service: svc, Manager: mgr, Options: opts})
	tb.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = h.Close(cctx)
		_ = mgr.Shutdown(cctx)
		_ = w.Close(cctx)
		_ = db.Close()
		stop()
	})
	s := &stack{hub: h, svc: svc, auth: as}
	for _, name := range []string{"owner", "viewer"} {
		u, err := as.CreateUser(ctx, name, name+"-password", false)
		if err != nil {
			tb.Fatal(err)
		}
		a := &auth.Actor{UserID: u.ID, Name: u.Name, Role: auth.RoleUser, Via: auth.ViaToken}
		if name == "owner" {
			s.owner = a
		} else {
			s.viewer = a
		}
	}
	sess, err := svc.CreateSession(ctx, s.owner, service.NewSession{Provider: "demo"})
	if err != nil {
		tb.Fatal(err)
	}
	s.session = sess.ID
	if err := as.AddMember(ctx, sess.ID, "viewer", auth.SessionRoleViewer); err != nil {
		tb.Fatal(err)
	}
	return s
}

// frames drains what a socketless connection queued.
func frames(c *conn) [][]byte {
	var out [][]byte
	for c.out.len() > 0 {
		it, err := c.out.pop(context.Background())
		if err != nil {
			break
		}
		out = append(out, compose([]item{it}))
	}
	return out
}
