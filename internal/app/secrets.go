package app

import (
	"context"
	"fmt"

	"harness/internal/models"
	"harness/internal/secrets"
)

// settingsStore loads the secret key (HARNESS_SECRET_KEY or the data
// directory's key file), seals the route API keys an older version stored
// in plain text, and returns the settings store that seals and opens them.
// The key itself is never logged; where it came from is.
func (a *App) settingsStore(ctx context.Context, getenv func(string) string) (*models.SettingsStore, error) {
	key, src, err := secrets.LoadKey(a.Config.DataDir, getenv)
	if err != nil {
		return nil, err
	}
	if src.LooseMode != 0 {
		a.Log.Warn("the secret key file was open to group or others; its mode is now 0600, but treat the key as exposed",
			"path", src.Path, "was", fmt.Sprintf("%#o", src.LooseMode))
	}
	if src.Kind == secrets.FromNewFile && a.DB.Driver == models.DriverPostgres {
		a.Log.Warn("created a secret key file for a PostgreSQL database: replicas sharing it must use the same key; set " +
			secrets.EnvVar + " on each")
	}
	a.replicaKey = key.Derive("harness replica requests v1")
	sealer, err := secrets.NewSealer(key)
	if err != nil {
		return nil, err
	}
	store := models.NewSettingsStore(a.DB, sealer)
	n, err := store.MigrateSecrets(ctx)
	if err != nil {
		return nil, err
	}
	// One line: where the key came from and how many plain-text route keys
	// an older version had left (0 once migrated).
	a.Log.Info("secret key ready", "source", src.String(), "sealed_plaintext_keys", n)
	return store, nil
}
