package templates

// EffortView is the chat header's reasoning-effort control.
type EffortView struct {
	// Current is the session's choice ("" = the model's default).
	Current string
	// Default is the current model's default effort ("" when it has none).
	Default string
	// Options are the efforts the current model lists; none hides the
	// control (the model declares no reasoning settings).
	Options []string
	// CanWrite enables the select; viewers see it disabled.
	CanWrite bool
	// Routes is, for writers, every route's models with their efforts as
	// JSON ({provider: [{id, efforts, default}]}): the script offers the
	// right ones after a live model switch. Empty for viewers.
	Routes string
}

// effortLabel names an effort in the select.
func effortLabel(e string) string {
	switch e {
	case "off":
		return "Off"
	case "low":
		return "Low"
	case "high":
		return "High"
	case "max":
		return "Max"
	}
	return e
}

// effortDefaultLabel is the default option's text.
func effortDefaultLabel(def string) string {
	if def == "" {
		return "Default"
	}
	return "Default (" + effortLabel(def) + ")"
}

// effortListed reports whether the current choice is among the options; an
// unlisted choice shows as the default (it is not sent to this model).
func effortListed(v EffortView) bool {
	for _, o := range v.Options {
		if o == v.Current {
			return true
		}
	}
	return false
}
