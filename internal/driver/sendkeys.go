package driver

import (
	"fmt"

	"harness/internal/llm"
	"harness/internal/session"
)

// sentLocked returns the live entry of key: one recorded within
// session.SendKeyTTL.
func (a *Agent) sentLocked(key session.SendKey) (session.Sent, bool) {
	s, ok := a.sent[key]
	if !ok || a.m.clock()-s.At >= session.SendKeyTTL {
		return session.Sent{}, false
	}
	return s, true
}

// recordSentLocked names msg by key, sweeping expired keys at most once an
// hour so the map holds about a day of sends.
func (a *Agent) recordSentLocked(key session.SendKey, msg llm.Message) {
	now := a.m.clock()
	if a.sent == nil {
		a.sent = map[session.SendKey]session.Sent{}
	}
	if now-a.pruned >= 60*60*1000 {
		for k, s := range a.sent {
			if now-s.At >= session.SendKeyTTL {
				delete(a.sent, k)
			}
		}
		a.pruned = now
	}
	a.sent[key] = session.Sent{MessageID: msg.ID, Digest: session.ContentDigest(msg.Content), At: now}
}

// Repeat answers a send while the store takes no writes (cause). A send
// whose key already names a message is a repeat: that message was kept
// (queued, claimed by a turn or stored), so the answer is ErrNotDurable,
// never "nothing was kept", or ErrKeyConflict for other content. ok is
// false when the key names no message: the send may be refused with
// nothing kept.
func (a *Agent) Repeat(msg llm.Message, cause error) (ok bool, err error) {
	key, keyed := session.KeyOf(msg)
	if !keyed {
		return false, nil
	}
	a.mu.Lock()
	prev, named := a.sentLocked(key)
	a.mu.Unlock()
	switch {
	case !named:
		return false, nil
	case prev.Digest != session.ContentDigest(msg.Content):
		return true, ErrKeyConflict
	}
	return true, fmt.Errorf("%w: %w", ErrNotDurable, cause)
}
