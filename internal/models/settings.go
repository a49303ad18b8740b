package models

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"harness/internal/session"
)

// Settings keys.
const (
	settingDefaultRoute = "default_route"
	settingUserPrefs    = "user.prefs." // + user id
)

// UserPrefs are a user's defaults for new sessions.
type UserPrefs struct {
	Provider string                 `json:"provider,omitempty"`
	Model    string                 `json:"model,omitempty"`
	Mode     session.PermissionMode `json:"mode,omitempty"`
}

// RouteSetting is a provider and model.
type RouteSetting struct {
	Provider string `json:"provider"`
	Model    string `json:"model,omitempty"`
}

// SettingsStore keeps admin-configured model routes (the providers table)
// and JSON settings rows (the server's default route, users'
// preferences).
type SettingsStore struct {
	db *DB
}

// NewSettingsStore builds a store over db.
func NewSettingsStore(db *DB) *SettingsStore { return &SettingsStore{db: db} }

// Providers lists the configured routes by name.
func (s *SettingsStore) Providers(ctx context.Context) ([]ProviderConfig, error) {
	var out []ProviderConfig
	if err := s.db.R.WithContext(ctx).Order("name").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list providers: %w", err)
	}
	return out, nil
}

// Provider reads one route.
func (s *SettingsStore) Provider(ctx context.Context, name string) (ProviderConfig, error) {
	var pc ProviderConfig
	err := s.db.R.WithContext(ctx).Where("name = ?", name).Take(&pc).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return pc, fmt.Errorf("provider %s: %w", name, ErrNotFound)
	}
	if err != nil {
		return pc, fmt.Errorf("read provider %s: %w", name, err)
	}
	return pc, nil
}

// SaveProvider inserts or updates a route. An empty APIKey keeps the stored
// key unless clearKey is set (keys are write-only: the form never shows
// them, so an empty field means "unchanged").
func (s *SettingsStore) SaveProvider(ctx context.Context, pc ProviderConfig, clearKey bool) error {
	pc.UpdatedAt = time.Now()
	cols := []string{"kind", "base_url", "default_model", "models", "enabled", "updated_at"}
	if pc.APIKey != "" || clearKey {
		cols = append(cols, "api_key")
	}
	err := s.db.W.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "name"}},
		DoUpdates: clause.AssignmentColumns(cols),
	}).Create(&pc).Error
	if err != nil {
		return fmt.Errorf("save provider %s: %w", pc.Name, err)
	}
	return nil
}

// DeleteProvider removes a route.
func (s *SettingsStore) DeleteProvider(ctx context.Context, name string) error {
	if err := s.db.W.WithContext(ctx).Where("name = ?", name).Delete(&ProviderConfig{}).Error; err != nil {
		return fmt.Errorf("delete provider %s: %w", name, err)
	}
	return nil
}

// DefaultRoute reads the admin's default route (zero when unset).
func (s *SettingsStore) DefaultRoute(ctx context.Context) (RouteSetting, error) {
	var r RouteSetting
	err := s.get(ctx, settingDefaultRoute, &r)
	return r, err
}

// SaveDefaultRoute stores the default route.
func (s *SettingsStore) SaveDefaultRoute(ctx context.Context, r RouteSetting) error {
	return s.put(ctx, settingDefaultRoute, r)
}

// UserPrefs reads a user's preferences (zero when unset).
func (s *SettingsStore) UserPrefs(ctx context.Context, userID string) (UserPrefs, error) {
	var p UserPrefs
	err := s.get(ctx, settingUserPrefs+userID, &p)
	return p, err
}

// SaveUserPrefs stores a user's preferences.
func (s *SettingsStore) SaveUserPrefs(ctx context.Context, userID string, p UserPrefs) error {
	return s.put(ctx, settingUserPrefs+userID, p)
}

func (s *SettingsStore) get(ctx context.Context, key string, v any) error {
	var row Setting
	err := s.db.R.WithContext(ctx).Where(clause.Eq{Column: clause.Column{Name: "key"}, Value: key}).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read setting %s: %w", key, err)
	}
	if err := json.Unmarshal([]byte(row.Value), v); err != nil {
		return fmt.Errorf("decode setting %s: %w", key, err)
	}
	return nil
}

func (s *SettingsStore) put(ctx context.Context, key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode setting %s: %w", key, err)
	}
	row := Setting{Key: key, Value: string(b), UpdatedAt: time.Now()}
	err = s.db.W.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "key"}},
		DoUpdates: clause.AssignmentColumns([]string{"value", "updated_at"}),
	}).Create(&row).Error
	if err != nil {
		return fmt.Errorf("store setting %s: %w", key, err)
	}
	return nil
}
