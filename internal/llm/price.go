package llm

// Price is what a route charges, in currency units (the admin's, shown as
// $) per million tokens. A route without prices has a nil *Price: a zero
// Price is a free route, not an unknown one.
type Price struct {
	Input float64 `json:"input"`
	// CachedInput is charged for prompt tokens served from the provider's
	// cache; providers that do not discount them are priced with the
	// Input price (routes.Form fills it in).
	CachedInput float64 `json:"cachedInput"`
	Output      float64 `json:"output"`
}

// Cost is what u costs at p. Cache writes are billed as input: the
// OpenAI-compatible routes report no separate write price.
func (p Price) Cost(u Usage) float64 {
	in := float64(u.InputTokens+u.CacheWriteTokens) * p.Input
	cached := float64(u.CacheReadTokens) * p.CachedInput
	out := float64(u.OutputTokens) * p.Output
	return (in + cached + out) / 1e6
}
