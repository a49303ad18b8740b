package render

import "harness/internal/llm"

// EffortNotice is the transcript's line for a model/effort event.
func EffortNotice(e llm.Effort) string {
	switch e {
	case "":
		return "Reasoning effort: the model's default"
	case llm.EffortOff:
		return "Thinking off"
	}
	return "Reasoning effort: " + string(e)
}
