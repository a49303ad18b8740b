package service

import (
	"context"
	"errors"
	"fmt"
	"harness/internal/crashpoint"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"harness/internal/auth"
	"harness/internal/importer"
	"harness/internal/llm"
	"harness/internal/models"
	"harness/internal/session"
	"harness/internal/workspace"
)

// DefaultImportTitle names an imported session whose log has no title and
// no message from a person.
const DefaultImportTitle = "Imported session"

// Import creates a session owned by a from a JSON-lines log: a Harness
// export or a DeepSeek Harness session log (see internal/importer for the
// formats, the conversions and the caps). The log becomes the new
// session's seed, followed by session/end-seed: the history is fixed, the
// session continues from it like a native one. The session gets a fresh
// workspace; its title is the log's (else the first words of the first
// message a person wrote, else DefaultImportTitle); its route is the log's
// last model selection when that route exists on this server (else the
// default route); its permission mode is the log's (default ask). What the
// import decides itself is logged after the end-seed marker: a title the
// log lacks (so the next prompt does not retitle it), a mode and a route
// that differ from the log's, and approval policy "ask" when the log's
// "never" was inherited from a parent session it no longer has.
//
// It is atomic: the row and every event are stored in one transaction, and
// the import is journaled (import_journal.go) from before its workspace is
// made until it completed, so a failure leaves nothing (the row, its
// events and the workspace are removed again) and so does a crash (the
// next start removes what it made). A log that cannot be converted is
// refused with CodeBadRequest and a message naming the line; input over
// the cap with CodeTooLarge; a full disk with CodeInsufficientStorage.
func (s *Service) Import(ctx context.Context, a *auth.Actor, r io.Reader) (Session, error) {
	if err := s.requireUser(a); err != nil {
		return Session{}, err
	}
	release, err := s.imports.take()
	if err != nil {
		return Session{}, err
	}
	defer release()
	res, err := importer.Read(r, importer.Options{})
	if err != nil {
		return Session{}, importError(err)
	}
	id := uuid.NewString()
	route := s.importRoute(res.Route)
	mode := res.Mode
	if !validMode(mode) {
		mode = session.ModeAsk
	}
	title := importTitle(res)
	journal, err := s.beginImport(id)
	if err != nil {
		return Session{}, s.fail(ctx, "import: begin", err)
	}
	dir, err := s.ws.CreateFresh(id)
	if err == nil {
		err = s.importStep(ctx, id, "begun")
	}
	if err != nil {
		s.finishFailedImport(ctx, id, journal, s.ws.Remove(id, dir))
		return Session{}, s.fail(ctx, "import: create workspace", err)
	}
	row := &models.Session{
		ID: id, OwnerID: a.UserID, Title: title, Workspace: dir, WorkspaceKind: string(workspace.KindFresh),
		Provider: route.Provider, Model: route.Model, Mode: string(mode),
		CreatedAt: time.Now().UTC().Truncate(time.Microsecond),
	}
	events, err := importLog(row, res, by(a))
	if err == nil {
		err = s.importStep(ctx, id, "seeded")
	}
	if err == nil {
		err = s.store.CreateSessionWithLog(ctx, row, events)
		if err != nil {
			err = fmt.Errorf("store: %w", err)
		}
	}
	if err != nil {
		s.finishFailedImport(ctx, id, journal, s.ws.Remove(id, dir))
		return Session{}, s.fail(ctx, "import: seed and store", err)
	}
	err = s.importStep(ctx, id, "stored")
	imported := len(res.Events)
	if err == nil {
		s.importImages(ctx, a, id, events)
		// The stored session must load the way every later load will. The
		// log read so far goes first (events is not used below either), so
		// it is not in memory twice.
		res.Events = nil
		_, err = s.mgr.Get(ctx, id)
	}
	if err == nil {
		err = s.importStep(ctx, id, "loaded")
	}
	if err == nil {
		// The commit point: from here on a restart keeps the session.
		err = journal.complete()
	}
	if err != nil {
		s.finishFailedImport(ctx, id, journal, s.undoImport(ctx, row))
		return Session{}, s.fail(ctx, "import: load", err)
	}
	// The check load is not kept: a large log would stay in memory until
	// the idle unload, though nobody may open it soon.
	s.mgr.Unload(id)
	s.log.InfoContext(ctx, "session imported", "session", id, "owner", a.UserID, "format", res.Format,
		"events", imported, "route", route.Provider+"/"+route.Model, "mode", mode, "notes", res.Notes)
	s.emit(Change{Kind: ChangeUpdated, Session: id})
	return s.read(ctx, id, auth.SessionRoleOwner, false)
}

// importLog seeds an in-memory log with the imported events (NewSeeded adds
// the end-seed marker) and appends the import's own decisions; it fills in
// the row's seed length.
func importLog(row *models.Session, res *importer.Result, actor *session.Actor) ([]session.Event, error) {
	at := row.CreatedAt.UnixMilli()
	h := session.Header{ID: row.ID, CreatedAt: at, Cwd: row.Workspace}
	// Trusted: the importer's log validated and compacted every event; a
	// second validation would copy the whole log again.
	l, err := session.NewSeeded(h, res.Events, session.Options{Clock: func() int64 { return at }, Trusted: true})
	if err != nil {
		return nil, fmt.Errorf("seed the imported log: %w", err)
	}
	row.SeedLength = l.Header().SeedLength
	st := l.State()
	if st.Effort != nil {
		row.Effort = string(st.Effort.Effort)
	}
	if res.Title == "" {
		if _, err := l.Append(session.TypeSessionTitle, session.SessionTitle{Title: row.Title, Source: session.TitleFallback}); err != nil {
			return nil, err
		}
	}
	if mode := session.PermissionMode(row.Mode); st.Mode != mode {
		if _, err := l.Append(session.TypePermissionMode, session.PermissionModeSet{Mode: mode, By: actor}); err != nil {
			return nil, err
		}
	}
	if res.DelegatedApprovals {
		if _, err := l.Append(session.TypeApprovalPolicy, session.ApprovalPolicy{Policy: "ask"}); err != nil {
			return nil, err
		}
	}
	if sel := st.Model; sel != nil && (sel.Provider != row.Provider || sel.Model != row.Model) {
		if _, err := l.Append(session.TypeModelSelected, session.ModelSelected{Provider: row.Provider, Model: row.Model, By: actor}); err != nil {
			return nil, err
		}
	}
	return l.Events(0, l.Len()), nil
}

// importRoute is the log's route when this server has it (its provider,
// and the model in the provider's catalog or its default), else the
// default route.
func (s *Service) importRoute(r importer.Route) Route {
	if p, ok := s.providers.Get(r.Provider); ok && r.Provider != "" {
		info := p.Info()
		model := r.Model
		if model == "" {
			model = info.DefaultModel
		}
		known := model == info.DefaultModel || slices.ContainsFunc(info.Models, func(m llm.ModelInfo) bool { return m.ID == model })
		if known {
			return Route{Provider: r.Provider, Model: model}
		}
	}
	p, m := s.providers.Default()
	return Route{Provider: p, Model: m}
}

// importTitle is the log's title, else the first words of the first
// message a person wrote (as the driver titles a new session), else
// DefaultImportTitle; one line, at most MaxTitleBytes.
func importTitle(res *importer.Result) string {
	t := strings.Join(strings.Fields(res.Title), " ")
	if t == "" {
		words := strings.Fields(res.FirstPrompt)
		if len(words) > 6 {
			words = words[:6]
		}
		t = truncateBytes(strings.Join(words, " "), 80)
	}
	if t == "" {
		return DefaultImportTitle
	}
	return truncateBytes(t, MaxTitleBytes)
}

// truncateBytes cuts s to at most n bytes at a rune boundary. It looks at
// the n bytes only: s may be a 64 MiB word.
func truncateBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// importError maps a refused import to the client's error: the importer's
// message names the line.
func importError(err error) error {
	var mbe *http.MaxBytesError
	var ie *importer.Error
	switch {
	case errors.As(err, &mbe):
		return &Error{Code: CodeTooLarge, Message: fmt.Sprintf("the import is larger than %d MiB", mbe.Limit>>20), Err: err}
	case errors.Is(err, importer.ErrTooLarge):
		return &Error{Code: CodeTooLarge, Message: err.Error(), Err: err}
	case errors.As(err, &ie):
		return &Error{Code: CodeBadRequest, Message: ie.Error(), Err: err}
	}
	return AsError(err)
}

// undoImport removes a stored import that did not complete: agent, row,
// events, images and workspace. Only a failure to delete the row is
// returned: the rest goes with it at the next start (RepairImports).
func (s *Service) undoImport(ctx context.Context, row *models.Session) error {
	ctx = context.WithoutCancel(ctx)
	if err := s.mgr.Remove(ctx, row.ID); err != nil {
		s.log.WarnContext(ctx, "import: stop agent", "session", row.ID, "err", err)
	}
	if err := s.store.DeleteSession(ctx, row.ID); err != nil && !isNotFound(err) {
		return fmt.Errorf("delete session: %w", err)
	}
	s.store.Forget(row.ID)
	return s.ws.Remove(row.ID, row.Workspace)
}

// importStep marks a step of Import for tests: a crash point (process
// tests kill or pause the server there) and a fault injected in-process
// (SetImportFault: "seeded", "stored") that fails the import there.
func (s *Service) importStep(ctx context.Context, id, step string) error {
	crashpoint.Hit(crashpoint.ImportStep)
	if err := ctx.Err(); err != nil {
		return err
	}
	if fn, ok := importFaults.Load(s); ok {
		return fn.(func(string, string) error)(id, step)
	}
	return nil
}

// importFaults are failures tests inject into Import, by service: fn(id,
// step) runs at each step (importStep); an error makes Import fail there.
var importFaults sync.Map // *Service → func(id, step string) error
