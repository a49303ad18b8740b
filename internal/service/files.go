package service

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"time"

	"harness/internal/auth"
	"harness/internal/files"
)

// MaxFileView bounds the content ReadFile returns; the whole file is a
// download (OpenFile).
const MaxFileView = 256 << 10

// FileContent is the start of a workspace file, for viewing.
type FileContent struct {
	Path    string    `json:"path"`
	Size    int64     `json:"size"`
	ModTime time.Time `json:"mtime"`
	// Truncated: Content holds the first MaxFileView bytes only.
	Truncated bool `json:"truncated"`
	// Binary: the file looks binary (a NUL byte near its start); Content
	// is then empty.
	Binary  bool   `json:"binary"`
	Content string `json:"content"`
}

// ListFiles lists a directory of the session's workspace (rel is relative
// to it, slash-separated; "" or "." is the workspace itself). Readers may
// browse; share links may not (forbidden).
func (s *Service) ListFiles(ctx context.Context, a *auth.Actor, id, rel string) (files.Listing, error) {
	dir, err := s.workspaceFor(ctx, a, id)
	if err != nil {
		return files.Listing{}, err
	}
	l, err := files.List(dir, rel)
	if err != nil {
		return files.Listing{}, s.filesError(ctx, "list files", err)
	}
	return l, nil
}

// ReadFile returns the first MaxFileView bytes of a workspace file.
func (s *Service) ReadFile(ctx context.Context, a *auth.Actor, id, rel string) (FileContent, error) {
	dir, err := s.workspaceFor(ctx, a, id)
	if err != nil {
		return FileContent{}, err
	}
	content, info, truncated, binary, err := files.Read(dir, rel, MaxFileView)
	if err != nil {
		return FileContent{}, s.filesError(ctx, "read file", err)
	}
	out := FileContent{Path: mustClean(rel), Size: info.Size(), ModTime: info.ModTime(), Truncated: truncated, Binary: binary}
	if !binary {
		out.Content = string(content)
	}
	return out, nil
}

// OpenFile opens a regular workspace file for download; the caller closes
// it.
func (s *Service) OpenFile(ctx context.Context, a *auth.Actor, id, rel string) (*os.File, fs.FileInfo, error) {
	dir, err := s.workspaceFor(ctx, a, id)
	if err != nil {
		return nil, nil, err
	}
	f, info, err := files.Open(dir, rel)
	if err != nil {
		return nil, nil, s.filesError(ctx, "open file", err)
	}
	return f, info, nil
}

// workspaceFor authorizes a to read session id's files and returns the
// workspace directory. Share links see the live transcript only: a
// workspace can hold far more than the conversation shows (keys, data),
// so they are refused.
func (s *Service) workspaceFor(ctx context.Context, a *auth.Actor, id string) (string, error) {
	if _, err := s.Authorize(ctx, a, id, auth.ActionRead); err != nil {
		return "", err
	}
	if !a.IsUser() {
		return "", Errorf(CodeForbidden, "share links do not give access to the workspace files")
	}
	row, err := s.store.GetSession(ctx, id)
	if err != nil {
		return "", s.fail(ctx, "get session", err)
	}
	if row.Workspace == "" {
		return "", Errorf(CodeNotFound, "this session has no workspace")
	}
	return row.Workspace, nil
}

// filesError maps the files package's errors to coded errors.
func (s *Service) filesError(ctx context.Context, op string, err error) error {
	switch {
	case errors.Is(err, files.ErrOutside):
		return wrap(CodeBadRequest, "the path is outside the workspace", err)
	case errors.Is(err, files.ErrInvalid):
		return wrap(CodeBadRequest, "invalid path", err)
	case errors.Is(err, files.ErrNotFound):
		return wrap(CodeNotFound, "no such file or directory in the workspace", err)
	case errors.Is(err, files.ErrNotDir):
		return wrap(CodeBadRequest, "not a directory", err)
	case errors.Is(err, files.ErrIsDir):
		return wrap(CodeBadRequest, "that is a directory, not a file", err)
	case errors.Is(err, files.ErrNotRegular):
		return wrap(CodeBadRequest, "not a regular file (a pipe, socket or device)", err)
	}
	return s.fail(ctx, op, err)
}

// mustClean is rel cleaned (it was validated already).
func mustClean(rel string) string {
	c, err := files.Clean(rel)
	if err != nil {
		return rel
	}
	return c
}
