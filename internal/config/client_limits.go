package config

import (
	"errors"
	"fmt"
	"strconv"
)

// ClientLimits bound what one client may take of the server (docs/protocol.md,
// "Limits"). Zero fields keep the WebSocket hub's defaults.
type ClientLimits struct {
	// WSMaxSockets is how many WebSockets one user (cookie and token
	// sockets together) or one share link may hold open
	// (HARNESS_WS_MAX_SOCKETS; default 64).
	WSMaxSockets int
	// WSCommandRate is how many requests per second one socket may send on
	// average (HARNESS_WS_COMMAND_RATE; default 50), WSCommandBurst how
	// many at once (HARNESS_WS_COMMAND_BURST; default 100).
	WSCommandRate  float64
	WSCommandBurst int
}

// parseClientLimits reads ClientLimits from the environment; a set variable must be a
// positive number.
func parseClientLimits(l *ClientLimits, getenv Getenv) error {
	var errs []error
	posInt := func(name string, dst *int) {
		v := getenv(name)
		if v == "" {
			return
		}
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			errs = append(errs, fmt.Errorf("%s %q: want a positive whole number", name, v))
			return
		}
		*dst = n
	}
	posInt("HARNESS_WS_MAX_SOCKETS", &l.WSMaxSockets)
	posInt("HARNESS_WS_COMMAND_BURST", &l.WSCommandBurst)
	if v := getenv("HARNESS_WS_COMMAND_RATE"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f > 0) {
			errs = append(errs, fmt.Errorf("HARNESS_WS_COMMAND_RATE %q: want a positive number", v))
		} else {
			l.WSCommandRate = f
		}
	}
	return errors.Join(errs...)
}
