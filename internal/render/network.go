package render

import (
	"net"
	"strconv"

	"harness/internal/session"
)

// NetworkRefusedText is the transcript's line for a connection the
// sandbox's egress proxy refused: "network: refused 127.0.0.1:5432
// (loopback)", with the address a name resolved to when it differs.
func NetworkRefusedText(n session.NetworkRefused) string {
	target := net.JoinHostPort(n.Host, strconv.Itoa(n.Port))
	if n.Address != "" && n.Address != target {
		target += " at " + n.Address
	}
	return "network: refused " + target + " (" + n.Reason + ")"
}
