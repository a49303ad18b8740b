package routes

import (
	"encoding/json"
	"math"
	"net/url"
	"regexp"
	"strconv"
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
	// Prices per million tokens, decimals >= 0; empty is "not set". Input
	// and output go together (a cost needs both); an empty cached price
	// charges cache hits at the input price.
	InputPrice       string
	CachedInputPrice string
	OutputPrice      string
	// ContextWindow in tokens; empty keeps the adapter's.
	ContextWindow string
	// ImageInput: the route's models take images.
	ImageInput bool
}

// maxPrice and maxWindow bound what a form may store: far above any real
// route, low enough that a typo (a key pasted in the wrong field) is
// refused rather than stored.
const (
	maxPrice  = 1e6
	maxWindow = 100_000_000
)

// parsePrice reads an optional price field.
func parsePrice(label, s string) (*float64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > maxPrice {
		return nil, inputf("the %s price must be a number from 0 to 1000000 (per million tokens)", label)
	}
	return &v, nil
}

// prices validates the price fields into the row.
func (f Form) prices(pc *models.ProviderConfig) error {
	var err error
	if pc.InputPrice, err = parsePrice("input", f.InputPrice); err != nil {
		return err
	}
	if pc.CachedInputPrice, err = parsePrice("cached input", f.CachedInputPrice); err != nil {
		return err
	}
	if pc.OutputPrice, err = parsePrice("output", f.OutputPrice); err != nil {
		return err
	}
	if (pc.InputPrice == nil) != (pc.OutputPrice == nil) || (pc.CachedInputPrice != nil && pc.InputPrice == nil) {
		return inputf("set both the input and output prices (the cached input price is optional), or none")
	}
	if w := strings.TrimSpace(f.ContextWindow); w != "" {
		n, err := strconv.ParseInt(w, 10, 64)
		if err != nil || n < 1 || n > maxWindow {
			return inputf("the context window must be a whole number of tokens from 1 to 100000000")
		}
		pc.ContextWindow = n
	}
	return nil
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
	pc := models.ProviderConfig{Name: name, Kind: kind, BaseURL: base, APIKey: key, DefaultModel: def, Models: string(b), Enabled: f.Enabled, ImageInput: f.ImageInput}
	if err := f.prices(&pc); err != nil {
		return models.ProviderConfig{}, err
	}
	return pc, nil
}
