package testkit

import (
	"log/slog"
	"os"
)

// Logger discards everything unless HARNESS_TEST_LOG is set, in which case
// it writes debug logs to stderr (for reading a failing test's story).
func Logger() *slog.Logger {
	if os.Getenv("HARNESS_TEST_LOG") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
