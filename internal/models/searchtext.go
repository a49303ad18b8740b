package models

import (
	"encoding/json"
	"strings"

	"harness/internal/session"
)

// messageProbe reads the parts of a user/message or assistant/message that
// search needs. user/message data is the message itself; assistant/message
// wraps it in "message" (older recordings put it directly in data).
type messageProbe struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	Source struct {
		Kind string `json:"kind"`
	} `json:"source"`
	Message *messageProbe `json:"message"`
}

// searchText returns the lower-cased text a session search matches for an
// event: the text blocks of a person's or the model's message. Messages from
// plugins (runtime context, compaction summaries) and tools are not searched,
// nor is reasoning.
func searchText(ev session.Event) string {
	if ev.Type != session.TypeUserMessage && ev.Type != session.TypeAssistantMessage {
		return ""
	}
	var m messageProbe
	if err := json.Unmarshal(ev.Data, &m); err != nil {
		return ""
	}
	if m.Message != nil {
		m = *m.Message
	}
	switch m.Source.Kind {
	case "", "user", "model":
	default:
		return ""
	}
	var sb strings.Builder
	for _, b := range m.Content {
		if b.Type != "text" || b.Text == "" {
			continue
		}
		if sb.Len() > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(b.Text)
	}
	return strings.ToLower(sb.String())
}
