package replica

import (
	"context"
	"encoding/json"
	"time"
)

// SettingsChannel tells the other replicas that an admin changed settings
// this replica applied at once (model routes, MCP servers): they read them
// again from the database, so every replica serves the same routes and
// tools whichever one the admin used.
const SettingsChannel = "harness_settings"

// Settings kinds.
const (
	SettingsRoutes = "routes"
	SettingsMCP    = "mcp"
)

// settingsKinds are every kind, reloaded after every connection of the
// listener (notifications sent before it were missed).
var settingsKinds = []string{SettingsRoutes, SettingsMCP}

type settingsWire struct {
	From string `json:"o"`
	Kind string `json:"k"`
}

// SettingsChanged tells the other replicas that settings of kind changed.
// It does not wait for them.
func (r *Replica) SettingsChanged(kind string) {
	b, err := json.Marshal(settingsWire{From: r.d.ID, Kind: kind})
	if err != nil {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(r.base, 5*time.Second)
		defer cancel()
		if err := r.d.Bus.Notify(ctx, SettingsChannel, string(b)); err != nil && r.base.Err() == nil {
			r.log.Warn("tell the other replicas about a settings change", "kind", kind, "err", err)
		}
	}()
}

// onSettings runs on the listener's goroutine: the reload runs beside it.
func (r *Replica) onSettings(payload string) {
	var w settingsWire
	if err := json.Unmarshal([]byte(payload), &w); err != nil {
		r.log.Warn("malformed settings notification from a replica", "err", err)
		return
	}
	if w.From == r.d.ID {
		return
	}
	r.reloadSettings(w.Kind)
}

func (r *Replica) reloadSettings(kinds ...string) {
	if r.d.ReloadSettings == nil {
		return
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for _, k := range kinds {
			ctx, cancel := context.WithTimeout(r.base, 30*time.Second)
			if err := r.d.ReloadSettings(ctx, k); err != nil && r.base.Err() == nil {
				r.log.Warn("reload settings changed by another replica", "kind", k, "err", err)
			}
			cancel()
		}
	}()
}
