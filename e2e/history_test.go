package e2e_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"harness/internal/driverstore"
	"harness/internal/llm"
	"harness/internal/models"
	"harness/internal/session"
)

// seedHistory stores a session of n turns (a question, a markdown answer
// with usage) owned by owner, through the real persistence path: a
// seeded log written by the batched writer.
func seedHistory(t testing.TB, s *server, owner string, n int) string {
	t.Helper()
	ctx := context.Background()
	u, err := s.app.Auth.GetUser(ctx, owner)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Add(-time.Duration(n) * time.Minute).UnixMilli()
	l := session.New(session.Header{ID: "seed"}, session.Options{Clock: func() int64 { now += 250; return now }})
	must := func(_ session.Event, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	model := llm.Source{Kind: llm.SourceModel, Provider: "demo", Model: "demo"}
	for i := 1; i <= n; i++ {
		must(l.Append(session.TypeTurnStart, session.TurnStart{Turn: i}))
		must(l.Append(session.TypeStepStart, session.StepBoundary{Turn: i, Step: 1}))
		must(l.AppendSurface(session.TypeUserMessage, llm.UserText(fmt.Sprintf("question %d", i), llm.Source{Kind: llm.SourceUser, UserID: u.ID, Name: owner}), session.Append(), nil))
		answer := fmt.Sprintf("Answer **%d**: here is some `code` and a list:\n\n- one\n- two\n\n```go\nfmt.Println(%d)\n```", i, i)
		must(l.AppendSurface(session.TypeAssistantMessage, session.AssistantMessage{Turn: i, Step: 1,
			Message: llm.Message{ID: uuid.NewString(), Role: llm.RoleAssistant, Source: model,
				Content: []llm.ContentBlock{{Type: llm.BlockReasoning, Text: fmt.Sprintf("Thinking about %d.", i)}, llm.Text(answer)}},
			Usage: &llm.Usage{InputTokens: 40, CacheReadTokens: int64(100 * i), OutputTokens: 30},
		}, session.Append(), []int64{}))
		must(l.Append(session.TypeStepEnd, session.StepBoundary{Turn: i, Step: 1}))
		must(l.Append(session.TypeTurnEnd, session.TurnEnd{Turn: i, Reason: session.TurnEndReason{Kind: session.ReasonCompleted}}))
	}
	id := uuid.NewString()
	ws := filepath.Join(s.app.WorkspaceRoot(), id)
	row := &models.Session{ID: id, OwnerID: u.ID, Title: fmt.Sprintf("%d turns", n), Workspace: ws, Provider: "demo", Model: "demo"}
	if err := s.app.Store.CreateSession(ctx, row); err != nil {
		t.Fatal(err)
	}
	if _, err := s.app.Manager.CreateSeeded(ctx, driverstore.MetaOf(row), l.Events(0, l.Len())); err != nil {
		t.Fatal(err)
	}
	// Unload it, so the page reads the store as after a restart.
	if err := s.app.Manager.Remove(ctx, id); err != nil {
		t.Fatal(err)
	}
	return id
}

func TestLongHistoryOpensAndScrolls(t *testing.T) {
	t.Parallel()
	s := newServer(t, serverOpts{})
	id := seedHistory(t, s, adminName, 1000)
	b := s.newBrowser()
	b.login(adminName, adminPass)
	b.open("/sessions/" + id)
	b.waitSynced()
	// The newest page first, older pages on demand.
	if got := lastBubble(b); got != "question 1000" {
		t.Errorf("last bubble %q", got)
	}
	first := b.count("#transcript > .item")
	if first > 200 {
		t.Errorf("the first page has %d items; it should be one page", first)
	}
	b.shot("history-1000")
	// Scroll up until the first turn; the DOM stays bounded meanwhile.
	maxItems := 0
	for range 200 {
		if eval[bool](b, `document.getElementById("history-top").dataset.more !== "1"`) {
			break
		}
		before := eval[string](b, `document.getElementById("history-top").dataset.before`)
		eval[bool](b, `(document.getElementById("scroller").scrollTop = 0, true)`)
		b.waitJS("an older page", `document.getElementById("history-top").dataset.before !== "`+before+`" || document.getElementById("history-top").dataset.more !== "1"`)
		maxItems = max(maxItems, b.count("#transcript > .item"))
	}
	if !eval[bool](b, `[...document.querySelectorAll(".item.user .user-text")].some(e => e.textContent === "question 1")`) {
		t.Fatal("never reached the first turn")
	}
	if maxItems > 600 {
		t.Errorf("the DOM held %d items, want at most 600", maxItems)
	}
	b.visible("#jump-latest")
	b.noDuplicateIDs()
	// Jump back to the newest messages.
	b.clickNav("#jump-latest button")
	b.waitSynced()
	if got := lastBubble(b); got != "question 1000" {
		t.Errorf("after the jump the last bubble is %q", got)
	}
	if !strings.Contains(b.text("#session-title"), "1000 turns") {
		t.Error("title lost")
	}
}

func lastBubble(b *browser) string {
	return eval[string](b, `[...document.querySelectorAll("#transcript .item.user .user-text")].at(-1)?.textContent ?? ""`)
}
