package models

// Own starts a lease term of a session: its appends carry epoch from now
// on, and what was queued under an earlier term is dropped (leases.go).
func (s *Store) Own(sessionID string, epoch int64) { s.W.Own(sessionID, epoch) }

// Disown ends the lease term epoch of a session in this process: nothing
// more it appends is stored.
func (s *Store) Disown(sessionID string, epoch int64) { s.W.Disown(sessionID, epoch) }
