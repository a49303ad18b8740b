package session

import "harness/internal/llm"

// TypeEffortSelected records the session's reasoning effort choice.
const TypeEffortSelected Type = "model/effort" // EffortSelected

// EffortSelected sets the reasoning effort of the session's requests from
// the next one on; last one wins. Effort "" returns to the route's default
// (no event: the default too). An effort the current model does not list
// is not sent: that model's default applies until the route changes back.
type EffortSelected struct {
	Effort llm.Effort `json:"effort,omitempty"`
	By     *Actor     `json:"by,omitempty"`
}
