package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"harness/internal/auth"
	"harness/internal/config"
	"harness/internal/models"
	"harness/internal/replica"
)

const cliUsage = `usage: web [flags] to serve (see -h), or one of these commands.
account commands (they open the database themselves; stop the server first when it uses SQLite):
  user add NAME [--admin]      create a user; the password is read from standard input
  user passwd NAME             set a password, read from standard input; ends their logins
  user list                    list users
  user disable NAME            refuse their logins and tokens; ends their logins
  user enable NAME
  user delete NAME             delete a user with their logins, tokens and memberships
  token create NAME [--name L] print a new API token for NAME (shown once; only a hash is kept)
  token list NAME              list NAME's tokens
  token revoke NAME ID         revoke one of NAME's tokens
  import FILE... --owner NAME  import session logs (Harness exports, DeepSeek Harness logs) for NAME
safe while the server runs:
  backup FILE                  copy the SQLite database to the new file FILE (mode 0600); PostgreSQL: use pg_dump
  events SESSION [--since N] [--type T]
                               print a session's stored events as JSON lines, from seq N (default 0);
                               SESSION may be the start of an id that names one session
`

// errUsage marks a malformed command line; RunCLI prints the usage.
var errUsage = errors.New("usage")

// RunCLI runs the subcommands of the server binary ("user ...",
// "token ...", "import ...", "backup FILE", "events SESSION"). handled is false when args is
// none of them and holds only flags, so main goes on to serve; any other
// word (cfg.Args, what config.Load left after the flags) is an unknown
// command, refused with the list rather than served: a mistyped command
// must not start a server. Passwords come from stdin, never from args; a
// new token is printed once to stdout.
func RunCLI(ctx context.Context, cfg config.Config, args []string, stdin io.Reader, stdout, stderr io.Writer) (handled bool, err error) {
	if len(args) > 0 && args[0] == "import" {
		return true, runImport(ctx, cfg, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "backup" {
		return true, runBackup(ctx, cfg, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "events" {
		return true, runEvents(ctx, cfg, args[1:], stdout, stderr)
	}
	defer func() {
		if errors.Is(err, errUsage) {
			fmt.Fprint(stderr, cliUsage)
		}
	}()
	if len(args) == 0 || args[0] != "user" && args[0] != "token" {
		if len(cfg.Args) > 0 {
			return true, fmt.Errorf("unknown command %q: %w", cfg.Args[0], errUsage)
		}
		return false, nil
	}
	if len(args) < 2 {
		return true, fmt.Errorf("%s: missing subcommand: %w", args[0], errUsage)
	}
	cmd, ok := cliCommands[args[0]+" "+args[1]]
	if !ok {
		return true, fmt.Errorf("unknown command %q: %w", args[0]+" "+args[1], errUsage)
	}
	fs := flag.NewFlagSet(args[0]+" "+args[1], flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	opts := cmd.flags(fs)
	pos, err := parseInterspersed(fs, args[2:])
	if err != nil {
		return true, fmt.Errorf("%s %s: %v: %w", args[0], args[1], err, errUsage)
	}
	if len(pos) != cmd.args {
		return true, fmt.Errorf("%s %s: want %d argument(s), got %d: %w", args[0], args[1], cmd.args, len(pos), errUsage)
	}

	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	db, err := openCLIDB(ctx, log, cfg)
	if err != nil {
		return true, err
	}
	defer db.Close()
	svc := auth.NewService(log, models.NewAuthStore(db), auth.Options{})
	var changes []auth.AccessChange
	svc.SubscribeAccess(func(c auth.AccessChange) { changes = append(changes, c) })
	std := cliIO{in: stdin, out: stdout, err: stderr}
	err = cmd.run(ctx, svc, std, pos, opts)
	// On PostgreSQL the running replicas cut the access taken away here at
	// once; on SQLite the server sees it at its sockets' next keepalive.
	if db.Driver == models.DriverPostgres {
		for _, c := range changes {
			if nerr := replica.NotifyAccess(ctx, db, "cli", c); nerr != nil {
				log.Warn("tell the running servers about the change", "err", nerr)
			}
		}
	}
	return true, err
}

// cliIO are the command's streams.
type cliIO struct {
	in       io.Reader
	out, err io.Writer
}

// cliOpts are the flags a command may take.
type cliOpts struct {
	admin     *bool
	tokenName *string
}

type cliCommand struct {
	args  int // positional arguments
	flags func(fs *flag.FlagSet) cliOpts
	run   func(ctx context.Context, svc *auth.Service, std cliIO, args []string, o cliOpts) error
}

func noFlags(*flag.FlagSet) cliOpts { return cliOpts{} }

var cliCommands = map[string]cliCommand{
	"user add": {1, func(fs *flag.FlagSet) cliOpts {
		return cliOpts{admin: fs.Bool("admin", false, "make the user an admin")}
	}, userAdd},
	"user passwd":  {1, noFlags, userPasswd},
	"user list":    {0, noFlags, userList},
	"user disable": {1, noFlags, userSetDisabled(true)},
	"user enable":  {1, noFlags, userSetDisabled(false)},
	"user delete":  {1, noFlags, userDelete},
	"token create": {1, func(fs *flag.FlagSet) cliOpts {
		return cliOpts{tokenName: fs.String("name", "", "a label for the token")}
	}, tokenCreate},
	"token list":   {1, noFlags, tokenList},
	"token revoke": {2, noFlags, tokenRevoke},
}

func userAdd(ctx context.Context, svc *auth.Service, std cliIO, args []string, o cliOpts) error {
	pw, err := readPassword(std)
	if err != nil {
		return err
	}
	u, err := svc.CreateUser(ctx, args[0], pw, *o.admin)
	if err != nil {
		return fmt.Errorf("user add: %w", err)
	}
	fmt.Fprintf(std.out, "created %s %s\n", u.Role, u.Name)
	return nil
}

func userPasswd(ctx context.Context, svc *auth.Service, std cliIO, args []string, _ cliOpts) error {
	pw, err := readPassword(std)
	if err != nil {
		return err
	}
	if err := svc.SetPassword(ctx, args[0], pw); err != nil {
		return fmt.Errorf("user passwd: %w", err)
	}
	fmt.Fprintf(std.out, "password of %s changed; their logins were ended\n", auth.NormalizeName(args[0]))
	return nil
}

func userList(ctx context.Context, svc *auth.Service, std cliIO, _ []string, _ cliOpts) error {
	users, err := svc.ListUsers(ctx)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(std.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tROLE\tSTATUS\tPASSWORD\tCREATED")
	for _, u := range users {
		status, pw := "enabled", "set"
		if u.Disabled {
			status = "disabled"
		}
		if !u.HasPassword {
			pw = "none"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", u.Name, u.Role, status, pw, u.CreatedAt.Format(time.DateOnly))
	}
	return w.Flush()
}

func userSetDisabled(disabled bool) func(context.Context, *auth.Service, cliIO, []string, cliOpts) error {
	return func(ctx context.Context, svc *auth.Service, std cliIO, args []string, _ cliOpts) error {
		if err := svc.SetDisabled(ctx, args[0], disabled); err != nil {
			return fmt.Errorf("user: %w", err)
		}
		state := "enabled"
		if disabled {
			state = "disabled"
		}
		fmt.Fprintf(std.out, "%s %s\n", auth.NormalizeName(args[0]), state)
		return nil
	}
}

func userDelete(ctx context.Context, svc *auth.Service, std cliIO, args []string, _ cliOpts) error {
	if err := svc.DeleteUser(ctx, args[0]); err != nil {
		return fmt.Errorf("user delete: %w", err)
	}
	fmt.Fprintf(std.out, "deleted %s\n", auth.NormalizeName(args[0]))
	return nil
}

func tokenCreate(ctx context.Context, svc *auth.Service, std cliIO, args []string, o cliOpts) error {
	tok, err := svc.CreateToken(ctx, args[0], *o.tokenName)
	if err != nil {
		return fmt.Errorf("token create: %w", err)
	}
	fmt.Fprintln(std.err, "This token is shown once; store it now. Use it as: Authorization: Bearer <token>")
	fmt.Fprintln(std.out, tok)
	return nil
}

func tokenList(ctx context.Context, svc *auth.Service, std cliIO, args []string, _ cliOpts) error {
	ts, err := svc.ListTokens(ctx, args[0])
	if err != nil {
		return fmt.Errorf("token list: %w", err)
	}
	w := tabwriter.NewWriter(std.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tNAME\tCREATED\tLAST USED\tSTATUS")
	for _, t := range ts {
		used, status := "never", "active"
		if t.LastUsedAt != nil {
			used = t.LastUsedAt.Format(time.DateTime)
		}
		if t.RevokedAt != nil {
			status = "revoked " + t.RevokedAt.Format(time.DateOnly)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", t.ID, t.Name, t.CreatedAt.Format(time.DateOnly), used, status)
	}
	return w.Flush()
}

func tokenRevoke(ctx context.Context, svc *auth.Service, std cliIO, args []string, _ cliOpts) error {
	if err := svc.RevokeToken(ctx, args[0], args[1]); err != nil {
		return fmt.Errorf("token revoke: %w", err)
	}
	fmt.Fprintf(std.out, "revoked token %s\n", args[1])
	return nil
}

// parseInterspersed lets flags come before or after the positional
// arguments ("user add alice --admin").
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func openCLIDB(ctx context.Context, log *slog.Logger, cfg config.Config) (*models.DB, error) {
	mc := models.Config{Driver: cfg.DBDriver, DSN: cfg.DBDSN}
	if (mc.Driver == "" || mc.Driver == models.DriverSQLite) && mc.DSN == "" {
		mc.DSN = filepath.Join(cfg.DataDir, "harness.db")
	}
	db, err := models.Open(ctx, log, mc)
	if errors.Is(err, models.ErrLocked) {
		return nil, fmt.Errorf("%w (the server is running? stop it first)", err)
	}
	if err != nil {
		return nil, err
	}
	return db, nil
}

// readPassword reads one line from stdin. On a terminal it prompts on
// stderr, turns echo off and asks twice.
func readPassword(std cliIO) (string, error) {
	if restore, ok := noEcho(std.in); ok {
		defer restore()
		first, err := promptLine(std, "Password: ")
		if err != nil {
			return "", err
		}
		again, err := promptLine(std, "Repeat password: ")
		if err != nil {
			return "", err
		}
		if first != again {
			return "", errors.New("the passwords do not match")
		}
		return first, nil
	}
	return readLine(std.in)
}

func promptLine(std cliIO, prompt string) (string, error) {
	fmt.Fprint(std.err, prompt)
	s, err := readLine(std.in)
	fmt.Fprintln(std.err)
	return s, err
}

// readLine reads up to the first newline, byte by byte so that a second
// read on the same stdin sees the next line.
func readLine(r io.Reader) (string, error) {
	var sb strings.Builder
	b := make([]byte, 1)
	for sb.Len() <= 4096 {
		n, err := r.Read(b)
		if n == 1 {
			if b[0] == '\n' {
				break
			}
			sb.WriteByte(b[0])
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("read password: %w", err)
		}
	}
	pw := strings.TrimRight(sb.String(), "\r")
	if pw == "" {
		return "", errors.New("no password on standard input (pipe it in, e.g. printf '%s\\n' \"$PW\" | ... )")
	}
	return pw, nil
}
