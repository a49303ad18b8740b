package replica

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"harness/internal/driver"
)

// The statuses of the sessions other replicas run, for the session list's
// status column here: kept from the owners' live notifications (every
// session's, not only the mirrored ones), and asked of the owners, one
// request per owner, for the sessions whose status this replica has not
// been told since the owner took them.

// remoteStatus is the last status an owner notified for a session.
type remoteStatus struct {
	owner  string
	status driver.Status
}

// maxStatuses bounds the statuses kept: past it they are forgotten and
// asked of the owners again when listed.
const maxStatuses = 10000

// noteStatus records a status owner notified (or reported when asked,
// with asked: then a notification already received from the same owner
// wins, being as new or newer).
func (r *Replica) noteStatus(id, owner string, st driver.Status, asked bool) {
	r.statusMu.Lock()
	defer r.statusMu.Unlock()
	if cur, ok := r.statuses[id]; asked && ok && cur.owner == owner {
		return
	}
	if len(r.statuses) >= maxStatuses {
		clear(r.statuses)
	}
	r.statuses[id] = remoteStatus{owner: owner, status: st}
}

// forgetStatuses drops every status: notifications may have been missed
// (the listener reconnected).
func (r *Replica) forgetStatuses() {
	r.statusMu.Lock()
	clear(r.statuses)
	r.statusMu.Unlock()
}

// RemoteOwner names the live replica other than this one that holds
// session id's lease; ok is false when none does or this one does.
func (r *Replica) RemoteOwner(ctx context.Context, id string) (owner, addr string, ok bool, err error) {
	owner, addr, ok, err = r.d.Leases.Holder(ctx, id)
	if err != nil || !ok || owner == r.d.ID {
		return "", "", false, err
	}
	return owner, addr, true, nil
}

// Statuses returns the status of each of ids that another live replica
// runs, as its notifications said, else as it answers when asked. A
// session nobody runs, or this replica runs, is absent; so is one whose
// owner could not be asked (logged).
func (r *Replica) Statuses(ctx context.Context, ids []string) map[string]driver.Status {
	out := map[string]driver.Status{}
	holders, err := r.d.Leases.Holders(ctx, ids)
	if err != nil {
		r.log.Warn("session statuses: lease holders", "err", err)
		return out
	}
	ask := map[string][]string{} // owner's address → sessions
	owners := map[string]string{}
	r.statusMu.Lock()
	for _, id := range ids {
		h, held := holders[id]
		cur, known := r.statuses[id]
		switch {
		case !held || h.Owner == r.d.ID:
			delete(r.statuses, id)
		case known && cur.owner == h.Owner:
			out[id] = cur.status
		default:
			ask[h.Addr] = append(ask[h.Addr], id)
			owners[h.Addr] = h.Owner
		}
	}
	r.statusMu.Unlock()
	for addr, ids := range ask {
		got, err := r.askStatuses(ctx, addr, ids)
		if err != nil {
			r.log.Warn("session statuses: ask their owner", "owner", owners[addr], "err", err)
			continue
		}
		for id, st := range got {
			r.noteStatus(id, owners[addr], st, true)
			out[id] = st
		}
	}
	return out
}

type statusesBody struct {
	Sessions []string `json:"sessions"`
}

type statusesAnswer struct {
	Statuses map[string]driver.Status `json:"statuses"`
}

// askStatuses asks the replica at addr for the statuses of its agents
// among ids.
func (r *Replica) askStatuses(ctx context.Context, addr string, ids []string) (map[string]driver.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	body, err := json.Marshal(statusesBody{Sessions: ids})
	if err != nil {
		return nil, err
	}
	out, status, err := r.call(ctx, http.MethodPost, addr, PathPrefix+"/statuses", body)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("statuses from %s: status %d", addr, status)
	}
	var a statusesAnswer
	if err := json.Unmarshal(out, &a); err != nil {
		return nil, fmt.Errorf("statuses from %s: %w", addr, err)
	}
	return a.Statuses, nil
}

// serveStatuses answers the statuses of this replica's agents among the
// sessions asked for (the others are absent).
func (r *Replica) serveStatuses(w http.ResponseWriter, req *http.Request) {
	var b statusesBody
	if err := json.NewDecoder(req.Body).Decode(&b); err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	a := statusesAnswer{Statuses: map[string]driver.Status{}}
	for _, id := range b.Sessions {
		if ag, ok := r.d.Manager.Lookup(id); ok {
			a.Statuses[id] = ag.Status()
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(a)
}
