package models

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"
)

// Workspace states. A clone or a fork's copy starts preparing and ends
// ready or failed; a fork's copy that a crash cut short ends interrupted
// (docs/lifecycle.md "Workspaces after a crash").
const (
	WorkspaceReady     = ""
	WorkspacePreparing = "preparing"
	WorkspaceFailed    = "failed"
	// WorkspaceInterrupted: the server stopped while the fork's copy ran;
	// the workspace is incomplete, so the session takes no input and its
	// tools do not run.
	WorkspaceInterrupted = "interrupted"
)

// SetWorkspace records a session's workspace directory (a relocated fresh
// workspace).
func (s *Store) SetWorkspace(ctx context.Context, id, dir string) error {
	return s.setSessionColumns(ctx, id, map[string]any{"workspace": dir})
}

// SetWorkspaceState records whether a session's workspace is ready.
func (s *Store) SetWorkspaceState(ctx context.Context, id, state string) error {
	return s.setSessionColumns(ctx, id, map[string]any{"workspace_state": state})
}

// FinishWorkspace moves a session's workspace state from preparing to
// state; it reports false (and changes nothing) when the workspace was no
// longer preparing, so an outcome is recorded once whoever records it.
func (s *Store) FinishWorkspace(ctx context.Context, id, state string) (bool, error) {
	res := s.DB.W.WithContext(ctx).Model(&Session{}).
		Where("id = ? AND workspace_state = ?", id, WorkspacePreparing).
		Update("workspace_state", state)
	if res.Error != nil {
		return false, fmt.Errorf("finish workspace of %s: %w", id, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// SetNetwork records whether a session's tools may use the network.
func (s *Store) SetNetwork(ctx context.Context, id string, on bool) error {
	return s.setSessionColumns(ctx, id, map[string]any{"network": on})
}

// TakePendingPrompt returns and clears the message held while a session's
// workspace was prepared ("" when none).
func (s *Store) TakePendingPrompt(ctx context.Context, id string) (string, error) {
	var prompt string
	err := s.DB.W.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var row Session
		if err := tx.Select("pending_prompt").Where("id = ?", id).Take(&row).Error; err != nil {
			return err
		}
		prompt = row.PendingPrompt
		if prompt == "" {
			return nil
		}
		return tx.Model(&Session{}).Where("id = ?", id).Update("pending_prompt", "").Error
	})
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return "", fmt.Errorf("session %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("take pending prompt of %s: %w", id, err)
	}
	return prompt, nil
}

// WorkspaceInUse reports whether a session other than except works in dir.
func (s *Store) WorkspaceInUse(ctx context.Context, dir, except string) (bool, error) {
	var n int64
	err := s.DB.R.WithContext(ctx).Model(&Session{}).Where("workspace = ? AND id <> ?", dir, except).Count(&n).Error
	if err != nil {
		return false, fmt.Errorf("workspace in use: %w", err)
	}
	return n > 0, nil
}

// SessionsPreparing lists sessions whose workspace was still being prepared
// (a clone or a fork's copy interrupted by a stop or a crash).
func (s *Store) SessionsPreparing(ctx context.Context) ([]Session, error) {
	var rows []Session
	err := s.DB.R.WithContext(ctx).Where("workspace_state = ?", WorkspacePreparing).Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("sessions preparing: %w", err)
	}
	return rows, nil
}

// SessionsWithRelativeWorkspace lists sessions whose stored workspace is
// not an absolute path (made with a relative data directory).
func (s *Store) SessionsWithRelativeWorkspace(ctx context.Context) ([]Session, error) {
	var rows []Session
	err := s.DB.R.WithContext(ctx).Select("id", "workspace").Where("workspace <> '' AND workspace NOT LIKE '/%'").Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("sessions with relative workspace: %w", err)
	}
	return rows, nil
}

// setSessionColumns updates typed columns of one session.
func (s *Store) setSessionColumns(ctx context.Context, id string, cols map[string]any) error {
	res := s.DB.W.WithContext(ctx).Model(&Session{}).Where("id = ?", id).Updates(cols)
	if res.Error != nil {
		return fmt.Errorf("update session %s: %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("session %s: %w", id, ErrNotFound)
	}
	return nil
}
