package service

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"harness/internal/driver"
	"harness/internal/models"
	"harness/internal/session"
	"harness/internal/workspace"
)

// interruptedCopy is why a fork whose copy a stop cut short takes no input:
// logged in its transcript and returned to every send and tool call.
const interruptedCopy = "the server stopped while copying the workspace from the parent session, so this fork's workspace is incomplete; delete this session and fork the parent again"

// repairWorkspace settles a session a stop or a crash left with its
// workspace preparing (docs/lifecycle.md "Workspaces after a crash"):
//
//   - an outcome already logged (the process died between the log and the
//     row) is copied to the row, and nothing else happens;
//   - a fork's copy is failed: its workspace is emptied, workspace/failed
//     {interrupted} is logged and the row says interrupted. The parent's
//     files may have changed since the fork point, so copying again could
//     not give the fork what it was forked with;
//   - a clone starts over in its emptied workspace (git clones into an
//     empty directory only), as after a graceful stop.
//
// It runs where no copy or clone of the session can be running: at start,
// before the server serves, or after a takeover, never for a session this
// process prepares now (jobs), and only under the session's lease (on
// PostgreSQL a session whose lease another live replica holds is left to
// that replica, whose copy may still run). Settled rows are not preparing
// any more, so a later start does nothing.
func (s *Service) repairWorkspace(ctx context.Context, row *models.Session) error {
	kind := workspace.Kind(row.WorkspaceKind)
	if kind != workspace.KindFork && kind != workspace.KindClone || s.jobs.running(row.ID) {
		return nil
	}
	ag, err := s.mgr.Get(ctx, row.ID)
	if errors.Is(err, driver.ErrNotOwner) || errors.Is(err, driver.ErrUnreachable) {
		s.log.InfoContext(ctx, "workspace preparing under another replica: left to it", "session", row.ID, "err", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("repair workspace of %s: %w", row.ID, err)
	}
	// On PostgreSQL the load that took the lease settles a fork's copy
	// itself (RepairTakenOver): nothing is left to do then.
	if fresh, err := s.store.GetSession(ctx, row.ID); err != nil {
		return fmt.Errorf("repair workspace of %s: %w", row.ID, err)
	} else if fresh.WorkspaceState != models.WorkspacePreparing {
		return nil
	}
	if state, ok := loggedOutcome(ag.Log()); ok {
		if _, err := s.store.FinishWorkspace(ctx, row.ID, state); err != nil {
			return fmt.Errorf("repair workspace of %s: %w", row.ID, err)
		}
		s.log.InfoContext(ctx, "workspace outcome was logged before a stop: row updated", "session", row.ID, "state", state)
		s.emit(Change{Kind: ChangeUpdated, Session: row.ID})
		if state != models.WorkspaceInterrupted {
			s.sendHeldPrompt(ctx, row.ID)
		}
		return nil
	}
	// A half copy or clone must not look whole (and git needs it empty).
	if err := s.ws.Empty(row.Workspace); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("repair workspace of %s: empty it: %w", row.ID, err)
	}
	if kind == workspace.KindClone {
		src := workspace.CloneSource{URL: row.WorkspaceSource}
		if strings.HasPrefix(row.WorkspaceSource, "/") {
			src = workspace.CloneSource{Local: row.WorkspaceSource}
		}
		s.log.InfoContext(ctx, "clone interrupted by a stop: starting it again", "session", row.ID, "source", src.String())
		s.startClone(row.ID, row.Workspace, src)
		return nil
	}
	return s.repairFork(ctx, ag, row)
}

// repairFork fails a fork's copy that a stop cut short: logged first, so
// a crash here leaves an outcome the next start copies to the row.
func (s *Service) repairFork(ctx context.Context, ag *driver.Agent, row *models.Session) error {
	ev := session.WorkspaceFailed{Kind: string(workspace.KindFork), Source: row.WorkspaceSource, Error: interruptedCopy, Interrupted: true}
	if err := ag.NoteWorkspace(ctx, session.TypeWorkspaceFailed, ev); errors.Is(err, driver.ErrWorkspaceSettled) {
		return nil // a concurrent repair (a start's, a takeover's) settled it
	} else if err != nil {
		return fmt.Errorf("repair fork %s: log: %w", row.ID, err)
	}
	if _, err := s.store.FinishWorkspace(ctx, row.ID, models.WorkspaceInterrupted); err != nil {
		return fmt.Errorf("repair fork %s: %w", row.ID, err)
	}
	s.log.WarnContext(ctx, "fork's workspace copy interrupted by a stop: marked failed", "session", row.ID, "parent", row.WorkspaceSource)
	s.emit(Change{Kind: ChangeUpdated, Session: row.ID})
	return nil
}

// loggedOutcome is the state the session's own log gives its workspace
// (the seed's events are the parent's: not counted); ok false when the
// log records no outcome.
func loggedOutcome(l *session.Log) (state string, ok bool) {
	seed := l.Header().SeedLength
	for _, ev := range l.Events(seed, l.Len()) {
		switch ev.Type {
		case session.TypeWorkspaceReady:
			state, ok = models.WorkspaceReady, true
		case session.TypeWorkspaceFailed:
			state, ok = models.WorkspaceFailed, true
			if f, err := session.Decode[session.WorkspaceFailed](ev); err == nil && f.Interrupted {
				state = models.WorkspaceInterrupted
			}
		}
	}
	return state, ok
}

// RepairTakenOver settles the fork's copy a dead replica left preparing in
// session id, once this replica took the session's lease: over from the
// dead holder, or on any load after that holder's lease lapsed (a request
// that comes before the takeover loop; the loop then no longer sees the
// session as orphaned, so without this the fork stayed preparing until a
// restart). A clone is
// left for the next start: the old owner's git may still write the
// directory if that replica only hung, and a second clone into it could
// look whole; a fork's failed copy cannot (its row refuses everything).
func (s *Service) RepairTakenOver(ctx context.Context, id string) error {
	row, err := s.store.GetSession(ctx, id)
	if err != nil {
		return fmt.Errorf("repair taken over %s: %w", id, err)
	}
	if row.WorkspaceState != models.WorkspacePreparing || row.WorkspaceKind != string(workspace.KindFork) {
		return nil
	}
	return s.repairWorkspace(ctx, row)
}
