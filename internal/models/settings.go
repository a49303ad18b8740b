package models

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"harness/internal/secrets"
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
// preferences). Route API keys are sealed in the database (internal/secrets,
// bound to "provider:<name>") and plain in every ProviderConfig it returns.
type SettingsStore struct {
	db     *DB
	sealer *secrets.Sealer
}

// NewSettingsStore builds a store over db that seals API keys with sealer,
// which is required: there is no plain-text mode.
func NewSettingsStore(db *DB, sealer *secrets.Sealer) *SettingsStore {
	if sealer == nil {
		panic("models: NewSettingsStore needs a sealer")
	}
	return &SettingsStore{db: db, sealer: sealer}
}

// keyContext binds a sealed key to its row, so a value copied to another
// route does not open there.
func keyContext(name string) string { return "provider:" + name }

// Providers lists the configured routes by name. A route whose stored key
// cannot be opened (another secret key, an altered value) is still listed,
// with APIKey empty and KeyError saying why, so one bad row neither hides
// the route from the admin nor stops the server; callers log KeyError.
func (s *SettingsStore) Providers(ctx context.Context) ([]ProviderConfig, error) {
	var out []ProviderConfig
	if err := s.db.R.WithContext(ctx).Order("name").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list providers: %w", err)
	}
	for i := range out {
		s.openKey(&out[i])
	}
	return out, nil
}

// Provider reads one route; its key is opened as in Providers.
func (s *SettingsStore) Provider(ctx context.Context, name string) (ProviderConfig, error) {
	var pc ProviderConfig
	err := s.db.R.WithContext(ctx).Where("name = ?", name).Take(&pc).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return pc, fmt.Errorf("provider %s: %w", name, ErrNotFound)
	}
	if err != nil {
		return pc, fmt.Errorf("read provider %s: %w", name, err)
	}
	s.openKey(&pc)
	return pc, nil
}

// openKey replaces a sealed APIKey by its plaintext, or clears it and sets
// KeyError. A plain-text key (a row MigrateSecrets has not reached yet) is
// used as it is.
func (s *SettingsStore) openKey(pc *ProviderConfig) {
	if !secrets.IsSealed(pc.APIKey) {
		return
	}
	key, err := s.sealer.Open(pc.APIKey, keyContext(pc.Name))
	if err != nil {
		pc.APIKey = ""
		pc.KeyError = fmt.Errorf("provider %s: stored API key: %w", pc.Name, err)
		return
	}
	pc.APIKey = key
}

// SaveProvider inserts or updates a route, sealing a non-empty APIKey. An
// empty APIKey keeps the stored key unless clearKey is set (keys are
// write-only: the form never shows them, so an empty field means
// "unchanged").
func (s *SettingsStore) SaveProvider(ctx context.Context, pc ProviderConfig, clearKey bool) error {
	pc.UpdatedAt = time.Now()
	pc.KeyError = nil
	cols := []string{"kind", "base_url", "default_model", "models", "enabled",
		"input_price", "cached_input_price", "output_price", "context_window", "image_input", "updated_at"}
	if pc.APIKey != "" || clearKey {
		cols = append(cols, "api_key")
	}
	if pc.APIKey != "" {
		sealed, err := s.sealer.Seal(pc.APIKey, keyContext(pc.Name))
		if err != nil {
			return fmt.Errorf("save provider %s: %w", pc.Name, err)
		}
		pc.APIKey = sealed
	}
	// GORM writes the zero value of a field with a column default as the
	// default (Enabled: true), so a disabled route is set after the upsert.
	enabled := pc.Enabled
	err := s.db.W.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		err := tx.Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "name"}},
			DoUpdates: clause.AssignmentColumns(cols),
		}).Create(&pc).Error
		if err != nil || enabled {
			return err
		}
		return tx.Model(&ProviderConfig{}).Where("name = ?", pc.Name).UpdateColumn("enabled", false).Error
	})
	if err != nil {
		return fmt.Errorf("save provider %s: %w", pc.Name, err)
	}
	return nil
}

// MigrateSecrets seals every API key still stored in plain text (rows from
// before keys were sealed) and returns how many it sealed. Sealed values
// are left alone, so it is idempotent and runs at every start. Each row is
// updated only if its key is still the plain text read, so a concurrent
// save or a second replica migrating at the same time is never
// overwritten or sealed twice.
func (s *SettingsStore) MigrateSecrets(ctx context.Context) (migrated int, err error) {
	var rows []ProviderConfig
	if err := s.db.W.WithContext(ctx).Select("name", "api_key").Where("api_key <> ''").Find(&rows).Error; err != nil {
		return 0, fmt.Errorf("migrate secrets: list providers: %w", err)
	}
	for _, pc := range rows {
		if secrets.IsSealed(pc.APIKey) {
			continue
		}
		sealed, err := s.sealer.Seal(pc.APIKey, keyContext(pc.Name))
		if err != nil {
			return migrated, fmt.Errorf("migrate secrets: provider %s: %w", pc.Name, err)
		}
		// UpdateColumn: sealing is not an edit, updated_at stays.
		res := s.db.W.WithContext(ctx).Model(&ProviderConfig{}).
			Where("name = ? AND api_key = ?", pc.Name, pc.APIKey).
			UpdateColumn("api_key", sealed)
		if res.Error != nil {
			return migrated, fmt.Errorf("migrate secrets: provider %s: %w", pc.Name, res.Error)
		}
		migrated += int(res.RowsAffected)
	}
	return migrated, nil
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
