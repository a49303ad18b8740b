package session

import (
	"crypto/sha256"
	"encoding/json"

	"harness/internal/llm"
)

// SendKeyTTL is how long a client's key names its message: a send repeated
// with the same key within it returns the first message instead of queuing
// a second (docs/protocol.md, "Sends are idempotent").
const SendKeyTTL = 24 * 60 * 60 * 1000 // epoch milliseconds, like Event.Time

// SendKey is a client's idempotency key for one message: unique per sender,
// so two people (or a person and a script under another user) never collide.
type SendKey struct {
	UserID   string
	ClientID string
}

// Sent is what a send key names: the message it queued, a digest of its
// content (a key reused with other content is a conflict) and when (epoch
// ms).
type Sent struct {
	MessageID string
	Digest    [16]byte
	At        int64
}

// KeyOf returns the send key of a person's message, if its client gave one.
func KeyOf(m llm.Message) (SendKey, bool) {
	if m.Source.Kind != llm.SourceUser || m.Source.ClientID == "" {
		return SendKey{}, false
	}
	return SendKey{UserID: m.Source.UserID, ClientID: m.Source.ClientID}, true
}

// ContentDigest is the digest SendKey conflicts compare: the content blocks
// as logged (text and image references).
func ContentDigest(content []llm.ContentBlock) [16]byte {
	b, _ := json.Marshal(content) // blocks always marshal: they were validated
	sum := sha256.Sum256(b)
	var d [16]byte
	copy(d[:], sum[:])
	return d
}

// SentKeys replays the inbox splices at or after seedLength and returns the
// send keys of the messages queued at or after since (epoch ms). The first
// queuing of a key wins (an edit or a steer-now re-inserts the message); a
// splice with outcome not_stored retracts what it removed, freeing the key:
// that send was refused and may be made again.
func SentKeys(events []Event, seedLength, since int64) (map[SendKey]Sent, error) {
	keys := map[SendKey]Sent{}
	var nextTurn, nextStep []llm.Message
	for _, ev := range events {
		if ev.Seq < seedLength || ev.Type != TypeInboxSpliced {
			continue
		}
		s, err := Decode[InboxSpliced](ev)
		if err != nil {
			return nil, errorf(CodeInvalidData, "seq %d (%s): %v", ev.Seq, ev.Type, err)
		}
		list := &nextTurn
		if s.Target == TargetNextStep {
			list = &nextStep
		}
		if s.Outcome == OutcomeNotStored && s.Start >= 0 && s.RemovedCount >= 0 && s.Start+s.RemovedCount <= len(*list) {
			for _, m := range (*list)[s.Start : s.Start+s.RemovedCount] {
				if k, ok := KeyOf(m); ok && keys[k].MessageID == m.ID {
					delete(keys, k)
				}
			}
		}
		next, err := ApplySplice(*list, s)
		if err != nil {
			return nil, atEvent(ev, err)
		}
		*list = next
		if ev.Time < since {
			continue
		}
		for _, m := range s.Inserted {
			k, ok := KeyOf(m)
			if !ok {
				continue
			}
			if _, seen := keys[k]; !seen {
				keys[k] = Sent{MessageID: m.ID, Digest: ContentDigest(m.Content), At: ev.Time}
			}
		}
	}
	return keys, nil
}
