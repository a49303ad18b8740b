package replica

import (
	"context"
	"encoding/json"
	"time"

	"harness/internal/auth"
)

// AccessChannel carries changes that may take access away (a logout, a
// revoked token or share link, a disabled user, a removed member) from the
// replica where they were made to the others, whose open sockets are then
// re-checked at once rather than at their next keepalive.
const AccessChannel = "harness_access"

type accessWire struct {
	From       string `json:"o"`
	UserID     string `json:"u,omitempty"`
	Credential string `json:"c,omitempty"`
	ShareLink  string `json:"l,omitempty"`
}

// Notifier sends a notification on a PostgreSQL channel (models.DB).
type Notifier interface {
	Notify(ctx context.Context, channel, payload string) error
}

// NotifyAccess tells every replica on the database about an access change
// made by from (a replica's id, or the CLI, which runs in a process of its
// own).
func NotifyAccess(ctx context.Context, n Notifier, from string, ch auth.AccessChange) error {
	b, err := json.Marshal(accessWire{From: from, UserID: ch.UserID, Credential: ch.CredentialID, ShareLink: ch.ShareLinkID})
	if err != nil {
		return err
	}
	return n.Notify(ctx, AccessChannel, string(b))
}

// AccessChanged tells the other replicas about a change this process made
// (one that reached it from another replica is not sent back). It does not
// wait.
func (r *Replica) AccessChanged(ch auth.AccessChange) {
	if ch.Remote {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(r.base, 5*time.Second)
		defer cancel()
		if err := NotifyAccess(ctx, r.d.Bus, r.d.ID, ch); err != nil && r.base.Err() == nil {
			r.log.Warn("tell the other replicas about an access change", "err", err)
		}
	}()
}

// onAccess runs on the listener's goroutine; the receiver must not block.
func (r *Replica) onAccess(payload string) {
	var w accessWire
	if err := json.Unmarshal([]byte(payload), &w); err != nil {
		r.log.Warn("malformed access notification from a replica", "err", err)
		return
	}
	if w.From == r.d.ID || r.d.RemoteAccess == nil {
		return
	}
	r.d.RemoteAccess(auth.AccessChange{UserID: w.UserID, CredentialID: w.Credential, ShareLinkID: w.ShareLink})
}
