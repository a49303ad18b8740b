package app

import (
	"fmt"
	"time"
)

// importPauseEnv names the test hook that makes every step of an import
// wait (service.Deps.ImportStepPause), so that a test killing the server
// lands inside an import (cmd/web TestImportKilled). Unset in production.
const importPauseEnv = "HARNESS_TEST_IMPORT_PAUSE"

// importStepPause reads importPauseEnv: a Go duration, or nothing.
func importStepPause(getenv func(string) string) (time.Duration, error) {
	v := getenv(importPauseEnv)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s=%q: want a duration such as 50ms", importPauseEnv, v)
	}
	return d, nil
}
