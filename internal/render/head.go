package render

import (
	"harness/internal/llm"
	"harness/internal/session"
)

// ModelLabelFunc names a session's route and model for the header (the
// page and live fragments name it the same way); offline marks the
// embedded demo model.
type ModelLabelFunc func(provider, model string) (label string, offline bool)

// RouteLabel is what a route and model are called in the UI: the route's
// label and the model's, or, for a route that is not configured (known
// false), the raw names marked unavailable. The embedded demo is always
// "Offline demo model", so nobody mistakes it for a real model.
func RouteLabel(p llm.ProviderInfo, known bool, provider, model string) (label string, offline bool) {
	if !known {
		return provider + " · " + model + " (unavailable)", false
	}
	if p.Offline {
		return "Offline demo model", true
	}
	label = p.Model(model).Label
	if label == "" {
		label = model
	}
	if p.Label != "" {
		return p.Label + " · " + label, false
	}
	return label, false
}

// modeKey is a permission mode as a class and data value; an unset mode
// is the default, ask.
func modeKey(mode string) string {
	switch session.PermissionMode(mode) {
	case session.ModeAuto, session.ModeReadOnly:
		return mode
	}
	return string(session.ModeAsk)
}

func modeText(mode string) string {
	switch session.PermissionMode(modeKey(mode)) {
	case session.ModeAuto:
		return "Auto"
	case session.ModeReadOnly:
		return "Read-only"
	}
	return "Ask"
}

func modeTitle(mode string) string {
	switch session.PermissionMode(modeKey(mode)) {
	case session.ModeAuto:
		return "Permission mode: auto — tools run without approvals"
	case session.ModeReadOnly:
		return "Permission mode: read-only — no writes or commands"
	}
	return "Permission mode: ask — writes and commands wait for approval"
}
