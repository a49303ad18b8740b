package session

// TypeNetworkRefused records a connection the sandbox's egress proxy
// refused: a log-only fact the transcript shows (the model does not see
// it; the tool saw the refusal itself). The proxy notes at most a few per
// minute per session.
const TypeNetworkRefused Type = "network/refused" // NetworkRefused

// NetworkRefused is one refused connection: the host and port the tool
// asked for, the address refused (when the name resolved) and why
// (egress.Reason: loopback, private, link-local, cgnat, metadata, server,
// ...).
type NetworkRefused struct {
	Host    string `json:"host"`
	Port    int    `json:"port"`
	Address string `json:"address,omitempty"`
	Reason  string `json:"reason"`
}
