package driver

import (
	"sync"

	"harness/internal/llm"
	"harness/internal/session"
)

// Status is an agent's run state.
type Status string

const (
	StatusIdle    Status = "idle"
	StatusRunning Status = "running"
)

// LiveKind names a live (non-durable) notification.
type LiveKind string

const (
	LiveStatus               LiveKind = "agent/status"
	LiveInserted             LiveKind = "agent/inbox/inserted"
	LiveClaimed              LiveKind = "agent/inbox/claimed"
	LiveDiscarded            LiveKind = "agent/inbox/discarded"
	LiveQueue                LiveKind = "agent/inbox"
	LiveInteractionRequested LiveKind = "interaction/requested"
	LiveInteractionResolved  LiveKind = "interaction/resolved"
	LiveError                LiveKind = "agent/error"
	LiveUnloaded             LiveKind = "agent/unloaded"
	// LiveTitle: the session's title changed (a person renamed it, or the
	// first prompt gave it one), for session lists.
	LiveTitle LiveKind = "agent/title"
	// LiveAllowed: the tools allowed for the session changed (a whole
	// snapshot in Tools).
	LiveAllowed LiveKind = "approvals/allowed"
	// LiveWorkspace: a step of the session's workspace being prepared (a
	// clone's progress), or its end.
	LiveWorkspace LiveKind = "workspace/progress"
)

// LiveEvent is one live notification about an agent. Durable facts travel as
// session events; these carry coordination state (status, queue, prompts).
type LiveEvent struct {
	Kind        LiveKind     `json:"-"`
	Session     string       `json:"session"`
	Status      Status       `json:"status,omitempty"`
	Message     *llm.Message `json:"message,omitempty"`
	Turn        int          `json:"turn,omitempty"`
	Queue       *Queue       `json:"queue,omitempty"`
	Interaction *Interaction `json:"interaction,omitempty"`
	Error       *llm.Failure `json:"error,omitempty"`
	// Tools are the tools allowed for the session (LiveAllowed).
	Tools []string `json:"tools,omitempty"`
	// Workspace is a workspace preparation step (LiveWorkspace).
	Workspace *WorkspaceProgress `json:"workspace,omitempty"`
	// Origin is the replica whose agent published it, when that is not
	// this process (PublishRemote); "" for this process's agents.
	Origin string `json:"-"`
}

// Queue is a whole snapshot of an agent's pending inbox.
type Queue struct {
	// Queued are next-turn prompts, each the prompt of its own turn.
	Queued []llm.Message `json:"queued"`
	// Steering are next-step messages entered at the next step boundary.
	Steering []llm.Message `json:"steering"`
}

// InteractionKind distinguishes approvals from questions.
type InteractionKind string

const (
	KindApproval InteractionKind = "approval"
	KindQuestion InteractionKind = "question"
)

// Interaction is a pending (or just resolved) approval or question.
type Interaction struct {
	ID        string             `json:"id"`
	Kind      InteractionKind    `json:"kind"`
	Turn      int                `json:"turn"`
	CallID    string             `json:"callId,omitempty"`
	ToolName  string             `json:"toolName,omitempty"`
	Arguments string             `json:"arguments,omitempty"`
	Reason    string             `json:"reason,omitempty"`
	Questions []session.Question `json:"questions,omitempty"`
	// Set when resolved.
	Outcome string         `json:"outcome,omitempty"`
	By      *session.Actor `json:"by,omitempty"`
	// Preview is what an approved call would do (from approval/asked).
	Preview *session.ApprovalPreview `json:"preview,omitempty"`
}

// bus fans live events out to listeners. Listeners are called synchronously,
// in publication order, and must not block or call back into the agent.
type bus struct {
	mu     sync.RWMutex
	nextID int
	subs   map[int]func(LiveEvent)
}

func (b *bus) subscribe(fn func(LiveEvent)) (cancel func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.subs == nil {
		b.subs = map[int]func(LiveEvent){}
	}
	b.nextID++
	id := b.nextID
	b.subs[id] = fn
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		delete(b.subs, id)
	}
}

func (b *bus) publish(ev LiveEvent) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	for _, fn := range b.subs {
		func() {
			defer func() { _ = recover() }() // a broken listener must not break the agent
			fn(ev)
		}()
	}
}

// PublishRemote hands the live listeners a notification that another
// replica's agent published (its session is owned there), so this
// replica's subscribers and sidebars follow it. ev.Origin must name that
// replica. A notification about a session whose agent runs here is stale
// (the lease moved here) and dropped.
func (m *Manager) PublishRemote(ev LiveEvent) {
	if ev.Origin == "" {
		return
	}
	if _, here := m.Lookup(ev.Session); here {
		return
	}
	m.live.publish(ev)
}
