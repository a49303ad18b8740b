package driver

// Texts the tests compare exactly.
const (
	IdentityText     = identityText
	ToolGuidanceText = toolGuidanceText
	NoContextText    = noContextText
	SnapshotPreamble = snapshotPreamble
)
