package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"harness/internal/app"
	"harness/internal/auth"
	"harness/internal/config"
	"harness/internal/models"
	"harness/internal/service"
)

const importUsage = `import command (it opens the database itself; stop the server first when it uses SQLite):
  import FILE... --owner NAME  import session logs (Harness exports or DeepSeek Harness
                               session logs, JSON lines) as sessions of user NAME
`

// runImport runs "import FILE... --owner NAME": it builds the app as the
// server does (database, model routes, workspaces, agent manager; no
// listener), imports each file through the service, so every session is
// stored, loaded and continuable exactly as one imported over the API,
// and prints one line per file. Files that imported stay imported when
// another fails; the error says how many failed.
func runImport(ctx context.Context, cfg config.Config, args []string, stdout, stderr io.Writer) (err error) {
	defer func() {
		if errors.Is(err, errUsage) {
			fmt.Fprint(stderr, importUsage)
		}
	}()
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	owner := fs.String("owner", "", "the user who owns the imported sessions")
	files, err := parseInterspersed(fs, args)
	switch {
	case err != nil:
		return fmt.Errorf("import: %v: %w", err, errUsage)
	case *owner == "":
		return fmt.Errorf("import: --owner NAME is required: %w", errUsage)
	case len(files) == 0:
		return fmt.Errorf("import: no file given: %w", errUsage)
	}

	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	a, err := app.New(ctx, log, cfg, app.Options{})
	if errors.Is(err, models.ErrLocked) {
		return fmt.Errorf("%w (the server is running? stop it first)", err)
	}
	if err != nil {
		return err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout+5*time.Second)
		defer cancel()
		if cerr := a.Close(closeCtx); cerr != nil && err == nil {
			err = fmt.Errorf("import: close: %w", cerr)
		}
	}()
	// What a killed import (of this command or the server) left goes
	// first, as the server's start does.
	if err := a.Service.RepairImports(ctx); err != nil {
		log.Warn("repair interrupted imports", "err", err)
	}
	u, err := a.Auth.GetUser(ctx, *owner)
	if err != nil {
		return fmt.Errorf("import: owner %s: %w", auth.NormalizeName(*owner), err)
	}
	if u.Disabled {
		return fmt.Errorf("import: owner %s is disabled", u.Name)
	}
	actor := &auth.Actor{UserID: u.ID, Name: u.Name, DisplayName: u.DisplayName, Role: u.Role, Via: auth.ViaServer}

	failed := 0
	for _, path := range files {
		s, err := importFile(ctx, a.Service, actor, path)
		if err != nil {
			failed++
			fmt.Fprintf(stdout, "%s: failed: %s\n", path, err)
			continue
		}
		fmt.Fprintf(stdout, "%s: imported as %s %q\n", path, s.ID, s.Title)
	}
	if failed > 0 {
		return fmt.Errorf("import: %d of %d file(s) failed", failed, len(files))
	}
	return nil
}

// importFile imports one file; the error is what the person should read.
func importFile(ctx context.Context, svc *service.Service, actor *auth.Actor, path string) (service.Session, error) {
	f, err := os.Open(path)
	if err != nil {
		return service.Session{}, err
	}
	defer f.Close()
	s, err := svc.Import(ctx, actor, f)
	if err != nil {
		if e := service.AsError(err); e.Code != service.CodeInternal {
			return service.Session{}, errors.New(e.Message)
		}
		return service.Session{}, err
	}
	return s, nil
}
