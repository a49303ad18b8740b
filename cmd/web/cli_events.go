package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"harness/internal/config"
	"harness/internal/models"
	"harness/internal/session"
)

// eventsPage is how many events `events` decodes per read: a long log is
// printed without being held whole.
const eventsPage = 1000

// eventLine is one line of `events`: a session.Event with its time
// readable. Data is the event's JSON as stored.
type eventLine struct {
	Seq             int64              `json:"seq"`
	Type            session.Type       `json:"type"`
	Time            string             `json:"time"` // RFC 3339, UTC, milliseconds
	Data            json.RawMessage    `json:"data"`
	Ignorable       bool               `json:"ignorable,omitempty"`
	SurfaceOp       *session.SurfaceOp `json:"surfaceOp,omitempty"`
	SourceEventSeqs []int64            `json:"sourceEventSeqs,omitempty"`
}

// runEvents runs "events SESSION [--since N] [--type T]": the session's
// stored events, decoded by the store's own reader, as JSON lines. It opens
// the database read-only (models.OpenReadOnly), so it is safe next to a
// running server on SQLite and on PostgreSQL. SESSION may be the first
// characters of an id when they name one session.
func runEvents(ctx context.Context, cfg config.Config, args []string, stdout, stderr io.Writer) (err error) {
	defer func() {
		if errors.Is(err, errUsage) {
			fmt.Fprint(stderr, cliUsage)
		}
	}()
	fs := flag.NewFlagSet("events", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	since := fs.Int64("since", 0, "the first seq to print")
	typ := fs.String("type", "", "print only events of this type")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return fmt.Errorf("events: %v: %w", err, errUsage)
	}
	if len(pos) != 1 {
		return fmt.Errorf("events: want 1 argument (the session id), got %d: %w", len(pos), errUsage)
	}
	if *since < 0 {
		return fmt.Errorf("events: --since %d: want a seq (0 or more): %w", *since, errUsage)
	}

	mc := models.Config{Driver: cfg.DBDriver, DSN: cfg.DBDSN}
	if (mc.Driver == "" || mc.Driver == models.DriverSQLite) && mc.DSN == "" {
		mc.DSN = filepath.Join(cfg.DataDir, "harness.db")
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	db, err := models.OpenReadOnly(ctx, log, mc)
	if err != nil {
		return fmt.Errorf("events: %w", err)
	}
	defer db.Close()
	store := models.NewStore(log, db, nil)
	id, err := store.SessionIDByPrefix(ctx, pos[0])
	if err != nil {
		return fmt.Errorf("events: %w", err)
	}

	out := bufio.NewWriter(stdout)
	defer func() {
		// What was decoded before an error is printed too.
		if ferr := out.Flush(); ferr != nil && err == nil {
			err = fmt.Errorf("events: %w", ferr)
		}
	}()
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	after := *since - 1
	for {
		evs, err := store.EventsSince(ctx, id, after, eventsPage)
		if err != nil {
			return fmt.Errorf("events: %w", err)
		}
		for _, ev := range evs {
			if *typ != "" && string(ev.Type) != *typ {
				continue
			}
			line := eventLine{
				Seq: ev.Seq, Type: ev.Type, Data: ev.Data,
				Time:      time.UnixMilli(ev.Time).UTC().Format("2006-01-02T15:04:05.000Z07:00"),
				Ignorable: ev.Ignorable, SurfaceOp: ev.SurfaceOp, SourceEventSeqs: ev.SourceEventSeqs,
			}
			if err := enc.Encode(line); err != nil {
				return fmt.Errorf("events: %w", err)
			}
		}
		if len(evs) < eventsPage {
			break
		}
		after = evs[len(evs)-1].Seq
	}
	return nil
}
