package replica

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"harness/internal/auth"
	"harness/internal/driver"
)

// The owner's side of the requests between replicas, under PathPrefix on
// the public listener (signed: sign.go):
//
//	POST PathPrefix/command  {actor, request}  → the protocol Response
//	GET  PathPrefix/state?session=ID           → liveState (409 when not owned here)
//	POST PathPrefix/statuses {sessions}         → {statuses} of the agents here (status.go)
const PathPrefix = "/internal/replica"

// Executor runs one protocol request (docs/protocol.md) for an actor on
// this replica and returns the Response frame. The hub implements it; a
// request it runs is not forwarded again.
type Executor func(ctx context.Context, a *auth.Actor, req []byte) []byte

// SetExecutor sets what runs the commands other replicas forward here.
func (r *Replica) SetExecutor(e Executor) {
	r.execMu.Lock()
	r.exec = e
	r.execMu.Unlock()
}

// actorWire is an actor as forwarded: the receiving replica authorizes it
// again, including that its credential is still live.
type actorWire struct {
	UserID         string    `json:"userId,omitempty"`
	Name           string    `json:"name,omitempty"`
	DisplayName    string    `json:"displayName,omitempty"`
	Role           auth.Role `json:"role,omitempty"`
	Via            auth.Via  `json:"via"`
	ShareSessionID string    `json:"shareSessionId,omitempty"`
	ShareLinkID    string    `json:"shareLinkId,omitempty"`
	CredentialID   string    `json:"credentialId,omitempty"`
}

func wireActor(a *auth.Actor) actorWire {
	return actorWire{a.UserID, a.Name, a.DisplayName, a.Role, a.Via, a.ShareSessionID, a.ShareLinkID, a.CredentialID}
}

func (w actorWire) actor() *auth.Actor {
	return &auth.Actor{UserID: w.UserID, Name: w.Name, DisplayName: w.DisplayName, Role: w.Role, Via: w.Via,
		ShareSessionID: w.ShareSessionID, ShareLinkID: w.ShareLinkID, CredentialID: w.CredentialID}
}

type commandBody struct {
	Actor   actorWire       `json:"actor"`
	Request json.RawMessage `json:"request"`
}

// liveState is an agent's live state as the owner reports it.
type liveState struct {
	Status  driver.Status        `json:"status"`
	Queue   driver.Queue         `json:"queue"`
	Pending []driver.Interaction `json:"pending,omitempty"`
	Allowed []string             `json:"allowed,omitempty"`
}

// maxForwardBody bounds a forwarded request (a protocol frame is at most
// 1 MiB; the actor is small).
const maxForwardBody = 2 << 20

// ErrForward is wrapped when a command could not reach the session's
// owner.
var ErrForward = errors.New("could not reach the replica that owns the session")

// Forward runs a protocol request on the replica that owns session id and
// returns that replica's Response frame.
func (r *Replica) Forward(ctx context.Context, id string, a *auth.Actor, req []byte) ([]byte, error) {
	owner, addr, err := r.owner(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrForward, err)
	}
	if owner == r.d.ID {
		return nil, fmt.Errorf("%w: this replica holds the lease", ErrForward)
	}
	body, err := json.Marshal(commandBody{Actor: wireActor(a), Request: req})
	if err != nil {
		return nil, err
	}
	ctx, cancel := r.WhileOwner(ctx, id, addr)
	defer cancel()
	out, status, err := r.call(ctx, http.MethodPost, addr, PathPrefix+"/command", body)
	if err != nil {
		return nil, fmt.Errorf("%w (%s): %w", ErrForward, owner, err)
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("%w (%s): status %d", ErrForward, owner, status)
	}
	return out, nil
}

// fetchState asks the owner of id for its live state.
func (r *Replica) fetchState(ctx context.Context, id string) (*liveState, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	owner, addr, err := r.owner(ctx, id)
	if err != nil {
		return nil, err
	}
	if owner == r.d.ID {
		return r.localState(id)
	}
	out, status, err := r.call(ctx, http.MethodGet, addr, PathPrefix+"/state?session="+url.QueryEscape(id), nil)
	if err != nil {
		return nil, err
	}
	if status == http.StatusConflict {
		return nil, errNoOwner
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("live state from %s: status %d", owner, status)
	}
	var st liveState
	if err := json.Unmarshal(out, &st); err != nil {
		return nil, fmt.Errorf("live state from %s: %w", owner, err)
	}
	return &st, nil
}

func (r *Replica) localState(id string) (*liveState, error) {
	ag, ok := r.d.Manager.Lookup(id)
	if !ok {
		return nil, errNoOwner
	}
	return &liveState{Status: ag.Status(), Queue: ag.Queue(), Pending: ag.PendingInteractions(), Allowed: ag.AllowedTools()}, nil
}

// call sends a signed request to the replica at addr.
func (r *Replica) call(ctx context.Context, method, addr, uri string, body []byte) ([]byte, int, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+uri, bytes.NewReader(body))
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	sign(req, r.d.Key, r.d.ID, body, time.Now())
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, maxForwardBody))
	if err != nil {
		return nil, 0, err
	}
	return out, resp.StatusCode, nil
}

// Handler serves the requests of the other replicas (PathPrefix).
func (r *Replica) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+PathPrefix+"/command", r.serveCommand)
	mux.HandleFunc("GET "+PathPrefix+"/state", r.serveState)
	mux.HandleFunc("POST "+PathPrefix+"/statuses", r.serveStatuses)
	return r.verified(mux)
}

// verified refuses a request without a valid signature of a replica.
func (r *Replica) verified(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxForwardBody))
		if err != nil {
			http.Error(w, "request too large", http.StatusRequestEntityTooLarge)
			return
		}
		if err := verify(req, r.d.Key, body, time.Now()); err != nil {
			r.log.Warn("refused a replica request", "path", req.URL.Path, "remote", req.RemoteAddr, "err", err)
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, req)
	})
}

func (r *Replica) serveCommand(w http.ResponseWriter, req *http.Request) {
	var b commandBody
	if err := json.NewDecoder(req.Body).Decode(&b); err != nil || len(b.Request) == 0 {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	r.execMu.RLock()
	exec := r.exec
	r.execMu.RUnlock()
	if exec == nil {
		http.Error(w, "not ready", http.StatusServiceUnavailable)
		return
	}
	out := exec(req.Context(), b.Actor.actor(), b.Request)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

func (r *Replica) serveState(w http.ResponseWriter, req *http.Request) {
	st, err := r.localState(req.URL.Query().Get("session"))
	if err != nil {
		http.Error(w, "not owned here", http.StatusConflict)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(st)
}
