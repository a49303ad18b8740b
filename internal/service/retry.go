package service

import (
	"context"
	"slices"
	"strings"

	"harness/internal/auth"
	"harness/internal/llm"
	"harness/internal/session"
)

// retryScanPage is how many events RetryTurn reads at a time while it
// walks the log back to the failed turn.
const retryScanPage = 512

// RetryTurn sends the prompt of a turn that ended with an error again, as
// a new followup message from the actor (the Retry button of a failed
// turn's error row): the turn's people's messages, in order, joined by a
// blank line, with their images. A turn that did not fail answers
// bad_request, an unknown turn not_found; the rest is SendMessage's.
func (s *Service) RetryTurn(ctx context.Context, a *auth.Actor, id string, turn int, clientID string) (string, error) {
	if turn < 1 {
		return "", Errorf(CodeBadRequest, "turn must be at least 1")
	}
	if _, err := s.Authorize(ctx, a, id, auth.ActionWrite); err != nil {
		return "", err
	}
	ag, release, err := s.agent(ctx, id)
	if err != nil {
		return "", err
	}
	prompt, images, err := failedPrompt(ag.Log(), turn)
	release()
	if err != nil {
		return "", err
	}
	return s.SendMessage(ctx, a, id, Message{Content: prompt, Mode: SendFollowup, ClientID: clientID, Attachments: images})
}

// failedPrompt reads turn's people's messages from the log, walking back
// from the end (a retried turn is nearly always the last one), and checks
// that the turn ended with an error.
func failedPrompt(l *session.Log, turn int) (string, []string, error) {
	var (
		texts  []string      // newest first
		msgs   []llm.Message // newest first, with text or images
		ended  *session.TurnEnd
		opened bool
	)
	in := false // between the turn's turn/end and its turn/start
scan:
	for to := l.Len(); to > 0; to -= retryScanPage {
		evs := l.Events(to-retryScanPage, to)
		for i := len(evs) - 1; i >= 0; i-- {
			ev := evs[i]
			switch ev.Type {
			case session.TypeTurnEnd:
				te, err := session.Decode[session.TurnEnd](ev)
				if err == nil && te.Turn == turn {
					ended, in = &te, true
				}
			case session.TypeTurnStart:
				ts, err := session.Decode[session.TurnStart](ev)
				if err == nil && ts.Turn == turn {
					opened = true
					break scan
				}
				if err == nil && ts.Turn < turn {
					break scan
				}
			case session.TypeUserMessage:
				if !in {
					continue
				}
				m, err := session.Decode[llm.Message](ev)
				if err != nil || m.Source.Kind != llm.SourceUser {
					continue
				}
				if strings.TrimSpace(m.Text()) != "" {
					texts = append(texts, m.Text())
				}
				if strings.TrimSpace(m.Text()) != "" || len(m.Images()) > 0 {
					msgs = append(msgs, m)
				}
			}
		}
	}
	switch {
	case !opened:
		return "", nil, Errorf(CodeNotFound, "turn %d not found", turn)
	case ended == nil:
		return "", nil, Errorf(CodeBadRequest, "turn %d is still running", turn)
	case ended.Reason.Kind != session.ReasonError:
		return "", nil, Errorf(CodeBadRequest, "turn %d did not fail (it ended %s)", turn, ended.Reason.Kind)
	case len(msgs) == 0:
		return "", nil, Errorf(CodeBadRequest, "turn %d has no prompt to send again", turn)
	}
	slices.Reverse(msgs)
	var sb strings.Builder
	for i := len(texts) - 1; i >= 0; i-- {
		if sb.Len() > 0 {
			sb.WriteString("\n\n")
		}
		sb.WriteString(texts[i])
	}
	return sb.String(), attachmentIDs(msgs), nil
}
