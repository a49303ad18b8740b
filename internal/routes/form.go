package routes

import (
	"encoding/json"
	"net/url"
	"regexp"
	"strings"

	"harness/internal/llm/openai"
	"harness/internal/models"
)

var routeName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// Form is an added or edited stored route as the settings form submits it.
type Form struct {
	Name         string
	Kind         string // deepseek | openai
	BaseURL      string
	APIKey       string // "" keeps the stored key (keys are write-only)
	ClearKey     bool
	DefaultModel string
	Models       string // comma, space or newline separated ids
	Enabled      bool
}

// config validates the form into a row; refusals are *InputError.
func (f Form) config() (models.ProviderConfig, error) {
	name := strings.ToLower(strings.TrimSpace(f.Name))
	if !routeName.MatchString(name) {
		return models.ProviderConfig{}, inputf("a route name has 1–64 of a-z, 0-9, '_' and '-'")
	}
	kind := strings.TrimSpace(f.Kind)
	if kind != string(openai.KindDeepSeek) && kind != string(openai.KindOpenAI) {
		return models.ProviderConfig{}, inputf("kind must be deepseek or openai")
	}
	base := strings.TrimSpace(f.BaseURL)
	if base != "" {
		u, err := url.Parse(base)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return models.ProviderConfig{}, inputf("the base URL must be an http or https URL")
		}
	} else if kind == string(openai.KindOpenAI) {
		return models.ProviderConfig{}, inputf("an OpenAI-compatible route needs a base URL")
	}
	key := strings.TrimSpace(f.APIKey)
	if strings.ContainsAny(key, "\r\n\t ") || len(key) > 512 {
		return models.ProviderConfig{}, inputf("the API key must be one line without spaces")
	}
	var ids []string
	for _, id := range strings.FieldsFunc(f.Models, func(r rune) bool { return r == ',' || r == '\n' || r == '\r' || r == ' ' }) {
		if len(id) > 128 {
			return models.ProviderConfig{}, inputf("a model id is at most 128 characters")
		}
		ids = append(ids, id)
	}
	def := strings.TrimSpace(f.DefaultModel)
	if def == "" && len(ids) > 0 {
		def = ids[0]
	}
	if def == "" && kind == string(openai.KindOpenAI) {
		return models.ProviderConfig{}, inputf("name at least one model")
	}
	b, _ := json.Marshal(ids) // a string slice always encodes
	return models.ProviderConfig{Name: name, Kind: kind, BaseURL: base, APIKey: key, DefaultModel: def, Models: string(b), Enabled: f.Enabled}, nil
}
