package models

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm/clause"
)

// StoredMCPServer is an MCP server added in Settings, its secrets opened.
type StoredMCPServer struct {
	Name string
	// Spec is the configuration without secret values (internal/mcp's
	// file form, as JSON).
	Spec string
	// Secrets are the env and header values by "env:NAME" and
	// "header:Name" (internal/mcp names them).
	Secrets map[string]string
	// SecretsError, when set, says why the stored secrets could not be
	// opened (wraps secrets.ErrCannotOpen); Secrets is then empty.
	SecretsError error
	UpdatedAt    time.Time
}

// mcpContext binds a server's sealed secrets to its row.
func mcpContext(name string) string { return "mcp:" + name }

// MCPServers lists the servers added in Settings by name.
func (s *SettingsStore) MCPServers(ctx context.Context) ([]StoredMCPServer, error) {
	var rows []MCPServerRow
	if err := s.db.R.WithContext(ctx).Order("name").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list MCP servers: %w", err)
	}
	out := make([]StoredMCPServer, 0, len(rows))
	for _, r := range rows {
		out = append(out, s.openMCP(r))
	}
	return out, nil
}

func (s *SettingsStore) openMCP(r MCPServerRow) StoredMCPServer {
	out := StoredMCPServer{Name: r.Name, Spec: r.Spec, Secrets: map[string]string{}, UpdatedAt: r.UpdatedAt}
	if r.Secrets == "" {
		return out
	}
	plain, err := s.sealer.Open(r.Secrets, mcpContext(r.Name))
	if err == nil {
		err = json.Unmarshal([]byte(plain), &out.Secrets)
	}
	if err != nil {
		out.Secrets = map[string]string{}
		out.SecretsError = fmt.Errorf("MCP server %s: stored secrets: %w", r.Name, err)
	}
	return out
}

// SaveMCPServer inserts or replaces a server, sealing its secrets.
func (s *SettingsStore) SaveMCPServer(ctx context.Context, srv StoredMCPServer) error {
	if srv.Name == "" {
		return errors.New("save MCP server: empty name")
	}
	row := MCPServerRow{Name: srv.Name, Spec: srv.Spec, UpdatedAt: time.Now()}
	if len(srv.Secrets) > 0 {
		b, err := json.Marshal(srv.Secrets)
		if err != nil {
			return fmt.Errorf("save MCP server %s: %w", srv.Name, err)
		}
		if row.Secrets, err = s.sealer.Seal(string(b), mcpContext(srv.Name)); err != nil {
			return fmt.Errorf("save MCP server %s: %w", srv.Name, err)
		}
	}
	err := s.db.W.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "name"}},
		DoUpdates: clause.AssignmentColumns([]string{"spec", "secrets", "updated_at"}),
	}).Create(&row).Error
	if err != nil {
		return fmt.Errorf("save MCP server %s: %w", srv.Name, err)
	}
	return nil
}

// DeleteMCPServer removes a server added in Settings.
func (s *SettingsStore) DeleteMCPServer(ctx context.Context, name string) error {
	if err := s.db.W.WithContext(ctx).Where("name = ?", name).Delete(&MCPServerRow{}).Error; err != nil {
		return fmt.Errorf("delete MCP server %s: %w", name, err)
	}
	return nil
}
