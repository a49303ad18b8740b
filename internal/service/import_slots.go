package service

import (
	"errors"
	"time"
)

// MaxConcurrentImports bounds the imports one server runs at once: each
// holds a whole log in memory while it converts, validates and stores it,
// so a few concurrent uploads must not add up to an out-of-memory kill.
const MaxConcurrentImports = 2

// ImportRetryAfter is when a refused import may try again (the HTTP edge
// sends it as Retry-After).
const ImportRetryAfter = 5 * time.Second

// ErrImportsBusy marks an import refused because MaxConcurrentImports
// were running: nothing of it was read or stored.
var ErrImportsBusy = errors.New("too many imports at once")

// importSlots is the server-wide semaphore of imports.
type importSlots chan struct{}

func newImportSlots() importSlots { return make(importSlots, MaxConcurrentImports) }

// take claims a slot without waiting; release gives it back.
func (s importSlots) take() (release func(), err error) {
	select {
	case s <- struct{}{}:
		return func() { <-s }, nil
	default:
		return nil, wrap(CodeUnavailable, "the server is importing other logs; nothing was stored: try again in a few seconds", ErrImportsBusy)
	}
}

// ImportsRunning is how many imports hold a slot now (a gauge).
func (s *Service) ImportsRunning() int { return len(s.imports) }
