package service

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"harness/internal/auth"
	"harness/internal/crashpoint"
	"harness/internal/driver"
	"harness/internal/models"
	"harness/internal/sandbox"
	"harness/internal/session"
	"harness/internal/workspace"
)

// WorkspaceRequest says where a new session works; the zero value is a
// fresh empty directory.
type WorkspaceRequest struct {
	Kind workspace.Kind `json:"kind,omitempty"` // fresh (default), dir or clone
	// Path is the existing directory to open (dir): an absolute path under
	// a workspace root the user may use.
	Path string `json:"path,omitempty"`
	// Source is what to clone (clone): an https URL on a host the admin
	// allowed, or a local repository under a workspace root.
	Source string `json:"source,omitempty"`
}

// WorkspaceInfo is a session's workspace as clients see it.
type WorkspaceInfo struct {
	Kind   workspace.Kind `json:"kind"`
	Path   string         `json:"path"`
	Source string         `json:"source,omitempty"`
	// State is "" when ready, "preparing" while a clone or a fork's copy
	// runs, "failed" when a clone did not work, "interrupted" when a crash
	// cut a fork's copy short.
	State string `json:"state,omitempty"`
	// Network: the session's tools may use the network.
	Network bool `json:"network"`
}

// Workspace states as clients see them.
const (
	WorkspaceReady     = models.WorkspaceReady
	WorkspacePreparing = models.WorkspacePreparing
	WorkspaceFailed    = models.WorkspaceFailed
)

// workspaceUser is who asks, as the workspace manager checks roots.
func workspaceUser(a *auth.Actor) workspace.User {
	return workspace.User{ID: a.UserID, Name: a.Name, Admin: a.IsAdmin()}
}

// workspaceError maps the manager's refusals to client codes; anything else
// is internal.
func (s *Service) workspaceError(ctx context.Context, op string, err error) error {
	switch {
	case errors.Is(err, workspace.ErrInvalid):
		return &Error{Code: CodeBadRequest, Message: err.Error()}
	case errors.Is(err, workspace.ErrNotAllowed):
		return &Error{Code: CodeForbidden, Message: err.Error()}
	case errors.Is(err, workspace.ErrInUse):
		return &Error{Code: CodeConflict, Message: err.Error()}
	}
	return s.fail(ctx, op, err)
}

// planWorkspace prepares row's workspace as req asks and records it on the
// row; for a clone it returns the checked source (the clone runs after the
// session exists).
func (s *Service) planWorkspace(ctx context.Context, a *auth.Actor, row *models.Session, req WorkspaceRequest) (*workspace.CloneSource, error) {
	switch req.Kind {
	case "", workspace.KindFresh:
		dir, err := s.ws.CreateFresh(row.ID)
		if err != nil {
			return nil, s.fail(ctx, "create workspace", err)
		}
		row.Workspace, row.WorkspaceKind = dir, string(workspace.KindFresh)
		return nil, nil
	case workspace.KindDir:
		dir, err := s.ws.ResolveDir(ctx, workspaceUser(a), req.Path, row.ID)
		if err != nil {
			return nil, s.workspaceError(ctx, "open workspace", err)
		}
		row.Workspace, row.WorkspaceKind, row.WorkspaceSource = dir, string(workspace.KindDir), dir
		return nil, nil
	case workspace.KindClone:
		src, err := s.ws.CheckClone(ctx, workspaceUser(a), req.Source)
		if err != nil {
			return nil, s.workspaceError(ctx, "clone", err)
		}
		if !s.ws.Sandbox().Status().Active {
			return nil, Errorf(CodeUnavailable, "cloning runs git in the sandbox, and tool processes are refused on this server: %s", s.ws.Sandbox().Status().Problem)
		}
		dir, err := s.ws.CreateFresh(row.ID)
		if err != nil {
			return nil, s.fail(ctx, "create workspace", err)
		}
		row.Workspace, row.WorkspaceKind, row.WorkspaceSource = dir, string(workspace.KindClone), src.String()
		row.WorkspaceState = models.WorkspacePreparing
		return &src, nil
	}
	return nil, Errorf(CodeBadRequest, "workspace kind must be fresh, dir or clone")
}

// managedDir is the directory Harness created for a session (removed with
// it), or "" for a directory opened from a root.
func managedDir(row *models.Session) string {
	if !workspace.Kind(row.WorkspaceKind).Managed() {
		return ""
	}
	return row.Workspace
}

// workspaceInfo is the client view of a row's workspace.
func workspaceInfo(row *models.Session) WorkspaceInfo {
	kind := workspace.Kind(row.WorkspaceKind)
	if kind == "" {
		kind = workspace.KindFresh
	}
	return WorkspaceInfo{Kind: kind, Path: row.Workspace, Source: row.WorkspaceSource, State: row.WorkspaceState, Network: row.Network}
}

// workspaceReady refuses input while a session's workspace is prepared,
// and for good once a crash cut its fork's copy short.
func (s *Service) workspaceReady(ctx context.Context, id string) error {
	row, err := s.store.GetSession(ctx, id)
	if err != nil {
		return s.fail(ctx, "get session", err)
	}
	if reason := notReady(row); reason != "" {
		return Errorf(CodeWorkspaceNotReady, "%s", reason)
	}
	return nil
}

// notReady says why row's workspace cannot be used now, "" when it can.
func notReady(row *models.Session) string {
	switch row.WorkspaceState {
	case models.WorkspacePreparing:
		if row.WorkspaceKind == string(workspace.KindFork) {
			return "the workspace is still being copied from the parent session; send your message when it is ready"
		}
		return "the workspace is still being prepared (cloning " + row.WorkspaceSource + "); send your message when it is ready"
	case models.WorkspaceInterrupted:
		return interruptedCopy
	}
	return ""
}

// WorkspaceGate is the driver's tool gate (driver.Options.WorkspaceGate):
// why session id's tools may not run now, "" when they may. A failed
// lookup lets them run: the turn's own writes fail on a broken store.
func (s *Service) WorkspaceGate(ctx context.Context, id string) string {
	row, err := s.store.GetSession(ctx, id)
	if err != nil {
		s.log.WarnContext(ctx, "workspace gate: get session", "session", id, "err", err)
		return ""
	}
	return notReady(row)
}

// jobs tracks background workspace preparations, so deleting a session
// cancels its clone and Close waits for all of them.
type jobs struct {
	mu      sync.Mutex
	ctx     context.Context
	stop    context.CancelFunc
	cancels map[string]context.CancelFunc
	wg      sync.WaitGroup
}

func newJobs() *jobs {
	ctx, stop := context.WithCancel(context.Background())
	return &jobs{ctx: ctx, stop: stop, cancels: map[string]context.CancelFunc{}}
}

// start runs fn for session id unless one already runs.
func (j *jobs) start(id string, fn func(ctx context.Context)) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if _, running := j.cancels[id]; running || j.ctx.Err() != nil {
		return false
	}
	ctx, cancel := context.WithCancel(j.ctx)
	j.cancels[id] = cancel
	j.wg.Go(func() {
		defer func() {
			j.mu.Lock()
			delete(j.cancels, id)
			j.mu.Unlock()
			cancel()
		}()
		fn(ctx)
	})
	return true
}

// track records that session id's workspace is prepared in this process
// outside a job (a fork's copy, in its request) until done is called.
func (j *jobs) track(id string) (done func()) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.cancels[id] = func() {}
	return func() {
		j.mu.Lock()
		defer j.mu.Unlock()
		delete(j.cancels, id)
	}
}

// running reports whether session id's workspace is prepared in this
// process now.
func (j *jobs) running(id string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	_, ok := j.cancels[id]
	return ok
}

func (j *jobs) cancel(id string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if c, ok := j.cancels[id]; ok {
		c()
	}
}

func (j *jobs) close() {
	j.stop()
	j.wg.Wait()
}

// progressEvery throttles live clone progress.
const progressEvery = 200 * time.Millisecond

// startClone clones src into session id's workspace in the background,
// telling viewers how it goes; then it logs the outcome, marks the
// workspace ready (or failed) and sends the message held meanwhile.
func (s *Service) startClone(id, dir string, src workspace.CloneSource) {
	s.jobs.start(id, func(ctx context.Context) {
		ag, err := s.mgr.Get(ctx, id)
		if err != nil {
			s.log.Error("clone: load session", "session", id, "err", err)
			return
		}
		var last time.Time
		res, err := s.ws.Clone(ctx, id, dir, src, func(p workspace.Progress) {
			crashpoint.Hit(crashpoint.CloneProgress)
			if time.Since(last) < progressEvery && p.Percent != 100 {
				return
			}
			last = time.Now()
			ag.PublishWorkspace(driver.WorkspaceProgress{Kind: string(workspace.KindClone), Source: src.String(), Phase: p.Phase, Percent: p.Percent, Line: p.Line})
		})
		if ctx.Err() != nil && errors.Is(ctx.Err(), context.Canceled) && s.jobs.ctx.Err() != nil {
			return // server stopping: the clone resumes at the next start
		}
		crashpoint.Hit(crashpoint.CloneDone)
		s.finishClone(context.WithoutCancel(ctx), ag, src, res, err)
	})
}

// finishClone records a clone's outcome and releases the held message.
func (s *Service) finishClone(ctx context.Context, ag *driver.Agent, src workspace.CloneSource, res workspace.CloneResult, cerr error) {
	id := ag.ID()
	state := models.WorkspaceReady
	progress := driver.WorkspaceProgress{Kind: string(workspace.KindClone), Source: src.String(), Done: true}
	var note error
	if cerr != nil {
		state, progress.Failed = models.WorkspaceFailed, cerr.Error()
		s.log.Warn("clone failed", "session", id, "source", src.String(), "err", cerr)
		note = ag.NoteWorkspace(ctx, session.TypeWorkspaceFailed, session.WorkspaceFailed{Kind: string(workspace.KindClone), Source: src.String(), Error: cerr.Error()})
	} else {
		s.log.Info("clone ready", "session", id, "source", src.String(), "commit", res.Commit, "files", res.Files)
		note = ag.NoteWorkspace(ctx, session.TypeWorkspaceReady, session.WorkspaceReady{
			Kind: string(workspace.KindClone), Source: src.String(), Commit: res.Commit, Branch: res.Branch, Files: res.Files, Bytes: res.Bytes,
		})
	}
	if note != nil {
		// The row stays preparing: the next start settles it.
		s.log.Error("clone: log the outcome", "session", id, "err", note)
		return
	}
	crashpoint.Hit(crashpoint.CloneLogged)
	if _, err := s.store.FinishWorkspace(ctx, id, state); err != nil {
		s.log.Error("clone: record the workspace state", "session", id, "err", err)
		return
	}
	ag.PublishWorkspace(progress)
	s.emit(Change{Kind: ChangeUpdated, Session: id})
	s.sendHeldPrompt(ctx, id)
}

// sendHeldPrompt sends the first message a session's creator wrote while its
// workspace was prepared, as that person.
func (s *Service) sendHeldPrompt(ctx context.Context, id string) {
	prompt, err := s.store.TakePendingPrompt(ctx, id)
	if err != nil || strings.TrimSpace(prompt) == "" {
		if err != nil {
			s.log.Error("held prompt", "session", id, "err", err)
		}
		return
	}
	row, err := s.store.GetSession(ctx, id)
	if err != nil {
		s.log.Error("held prompt", "session", id, "err", err)
		return
	}
	u, err := s.auth.GetUserByID(ctx, row.OwnerID)
	if err != nil {
		s.log.Error("held prompt: the session's owner", "session", id, "err", err)
		return
	}
	owner := &auth.Actor{UserID: u.ID, Name: u.Name, DisplayName: u.DisplayName, Role: u.Role, Via: auth.ViaServer}
	if _, err := s.SendMessage(ctx, owner, id, Message{Content: prompt}); err != nil {
		s.log.Error("held prompt", "session", id, "err", err)
	}
}

// ResumeWorkspaces runs at start, before the server serves: workspaces
// stored with a relative data directory are found again under the current
// one, and workspaces a stop or a crash left preparing are settled
// (repairWorkspace: clones start over, forks' copies are failed).
func (s *Service) ResumeWorkspaces(ctx context.Context) error {
	rel, err := s.store.SessionsWithRelativeWorkspace(ctx)
	if err != nil {
		return err
	}
	for _, row := range rel {
		dir := s.ws.Relocate(row.ID, row.Workspace)
		if dir == row.Workspace {
			continue
		}
		if err := s.store.SetWorkspace(ctx, row.ID, dir); err != nil {
			return err
		}
		s.log.Info("workspace path made absolute", "session", row.ID, "was", row.Workspace, "now", dir)
	}
	preparing, err := s.store.SessionsPreparing(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for i := range preparing {
		if err := s.repairWorkspace(ctx, &preparing[i]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Close stops background workspace preparations and waits for them.
func (s *Service) Close() { s.jobs.close() }

// WorkspaceRoots lists the roots a may open directories under.
func (s *Service) WorkspaceRoots(ctx context.Context, a *auth.Actor) ([]workspace.Root, error) {
	if err := s.requireUser(a); err != nil {
		return nil, err
	}
	roots, err := s.ws.UsableRoots(ctx, workspaceUser(a))
	if err != nil {
		return nil, s.fail(ctx, "workspace roots", err)
	}
	if roots == nil {
		roots = []workspace.Root{}
	}
	return roots, nil
}

// BrowseWorkspace lists the subdirectories of path, a root a may use or a
// directory under one (the workspace picker).
func (s *Service) BrowseWorkspace(ctx context.Context, a *auth.Actor, path string) ([]workspace.DirEntry, error) {
	if err := s.requireUser(a); err != nil {
		return nil, err
	}
	out, err := s.ws.Browse(ctx, workspaceUser(a), path)
	if err != nil {
		return nil, s.workspaceError(ctx, "browse", err)
	}
	return out, nil
}

// SetNetwork lets (or stops) a session's tools use the network. Only an
// admin may: the network reaches what the server's host reaches.
func (s *Service) SetNetwork(ctx context.Context, a *auth.Actor, id string, on bool) error {
	if _, err := s.Authorize(ctx, a, id, auth.ActionRead); err != nil {
		return err
	}
	if !a.IsAdmin() {
		return Errorf(CodeForbidden, "only an admin can change a session's network access")
	}
	if err := s.store.SetNetwork(ctx, id, on); err != nil {
		return s.fail(ctx, "set network", err)
	}
	s.log.InfoContext(ctx, "session network changed", "session", id, "network", on, "by", a.UserID)
	s.emit(Change{Kind: ChangeUpdated, Session: id})
	return nil
}

// SandboxStatus is what confines tool processes on this server.
func (s *Service) SandboxStatus() sandbox.Status { return s.ws.Sandbox().Status() }

// SandboxKnown is SandboxStatus without waiting for the start-up probe
// (ok false while it runs).
func (s *Service) SandboxKnown() (sandbox.Status, bool) { return s.ws.Sandbox().Known() }

// copyForFork copies the parent's workspace into the fork's fresh one,
// logs what was copied (or why nothing was), then marks the workspace
// ready. The outcome is logged before the row changes: after a crash the
// log says whether the copy finished (repairFork).
func (s *Service) copyForFork(ctx context.Context, parent *models.Session, childID, dir string) {
	rep, err := s.ws.CopyTree(ctx, parent.Workspace, dir)
	if err != nil {
		s.log.WarnContext(ctx, "fork: copy the workspace", "session", childID, "parent", parent.ID, "err", err)
		rep = workspace.CopyReport{Reason: "the copy failed: " + err.Error()}
		// A half copy would look whole: start empty instead.
		if rerr := s.ws.Empty(dir); rerr != nil {
			s.log.WarnContext(ctx, "fork: empty the workspace", "session", childID, "err", rerr)
		}
	}
	crashpoint.Hit(crashpoint.ForkCopied)
	// The outcome is recorded even if the request is gone meanwhile.
	ctx = context.WithoutCancel(ctx)
	ag, err := s.mgr.Get(ctx, childID)
	if err != nil {
		s.log.ErrorContext(ctx, "fork: load the session", "session", childID, "err", err)
		return
	}
	copied := rep.Copied
	ev := session.WorkspaceReady{Kind: string(workspace.KindFork), Source: parent.ID, Files: rep.Files, Bytes: rep.Bytes, Copied: &copied, Note: rep.Reason}
	if err := ag.NoteWorkspace(ctx, session.TypeWorkspaceReady, ev); err != nil {
		// The row stays preparing: the next start settles it.
		s.log.ErrorContext(ctx, "fork: log the workspace copy", "session", childID, "err", err)
		return
	}
	crashpoint.Hit(crashpoint.ForkLogged)
	if _, err := s.store.FinishWorkspace(ctx, childID, models.WorkspaceReady); err != nil {
		s.log.ErrorContext(ctx, "fork: record the workspace state", "session", childID, "err", err)
	}
}
