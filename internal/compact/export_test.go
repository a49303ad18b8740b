package compact

// Test-only views of unexported state, for the package's external tests.

// DefaultOptions returns the defaults explicitly.
func DefaultOptions() Options { return Options{}.withDefaults() }

// SummaryInstruction returns the instruction the summary call ends with.
func SummaryInstruction() string { return summaryInstruction }
