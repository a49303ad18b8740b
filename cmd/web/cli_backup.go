package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"harness/internal/config"
	"harness/internal/models"
)

// runBackup runs "backup FILE": a consistent copy of the SQLite database,
// safe while the server runs (models.BackupSQLite goes through SQLite and
// takes no lock the server holds). FILE must not exist; it gets mode 0600.
// PostgreSQL has its own tool for this.
func runBackup(ctx context.Context, cfg config.Config, args []string, stdout, stderr io.Writer) (err error) {
	defer func() {
		if errors.Is(err, errUsage) {
			fmt.Fprint(stderr, cliUsage)
		}
	}()
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return fmt.Errorf("backup: %v: %w", err, errUsage)
	}
	if len(pos) != 1 {
		return fmt.Errorf("backup: want 1 argument (the new file), got %d: %w", len(pos), errUsage)
	}
	if cfg.DBDriver == models.DriverPostgres {
		// The DSN may hold a password: never echo it.
		return errors.New("backup: the database is PostgreSQL: use pg_dump (e.g. pg_dump -Fc -f harness.dump \"$HARNESS_DB_DSN\")")
	}
	if err := models.BackupSQLite(ctx, cfg.DBDSN, pos[0]); err != nil {
		return err
	}
	size := int64(-1)
	if st, err := os.Stat(pos[0]); err == nil {
		size = st.Size()
	}
	fmt.Fprintf(stdout, "backed up %s to %s (%d bytes)\n", cfg.DBDSN, pos[0], size)
	return nil
}
