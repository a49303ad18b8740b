package session

import (
	"encoding/json"

	"harness/internal/llm"
)

// Durable event types. Each documents its data type.
const (
	TypeTurnStart        Type = "turn/start"          // TurnStart
	TypeTurnEnd          Type = "turn/end"            // TurnEnd
	TypeStepStart        Type = "step/start"          // StepBoundary
	TypeStepEnd          Type = "step/end"            // StepBoundary
	TypeUserMessage      Type = "user/message"        // llm.Message (surface)
	TypeAssistantChunk   Type = "assistant/chunk"     // AssistantChunk
	TypeAssistantMessage Type = "assistant/message"   // AssistantMessage (surface)
	TypeToolCall         Type = "tool/call"           // ToolCall
	TypeToolResult       Type = "tool/result"         // ToolResult (surface)
	TypeToolOutput       Type = "tool/output"         // ToolOutput: live tool progress
	TypeTodoWrite        Type = "todo/write"          // TodoWrite
	TypeRequestHeader    Type = "request/header"      // RequestHeader
	TypeRequestContext   Type = "request/context"     // RequestContext
	TypeInboxSpliced     Type = "agent/inbox/spliced" // InboxSpliced
	TypeEndSeed          Type = "session/end-seed"    // EndSeed
	TypeLLMRetry         Type = "llm/retry"           // LLMRetry
	TypeLLMRetryStarted  Type = "llm/retry-started"   // LLMRetryStarted
	TypeApprovalAsked    Type = "approval/asked"      // ApprovalAsked
	TypeApprovalDecided  Type = "approval/decided"    // ApprovalDecided
	TypeApprovalPolicy   Type = "approval/policy"     // ApprovalPolicy
	TypeApprovalRevoked  Type = "approval/revoked"    // ApprovalRevoked
	TypePermissionMode   Type = "permission/mode"     // PermissionModeSet
	TypeModelSelected    Type = "model/selected"      // ModelSelected
	TypeQuestionAsked    Type = "question/asked"      // QuestionAsked
	TypeQuestionAnswered Type = "question/answered"   // QuestionAnswered
	TypeCompactionStart  Type = "compaction/start"    // CompactionStart
	TypeCompactionSum    Type = "compaction/summary"  // CompactionSummary
	TypeCompactionPrune  Type = "compaction/prune"    // CompactionPrune
	TypeCompactionEnd    Type = "compaction/end"      // CompactionEnd
	TypeSessionTitle     Type = "session/title"       // SessionTitle
)

// KnownTypes is the reader vocabulary: an event of a type not listed here and
// not marked ignorable refuses to load.
var KnownTypes = map[Type]bool{
	TypeTurnStart: true, TypeTurnEnd: true, TypeStepStart: true, TypeStepEnd: true,
	TypeUserMessage: true, TypeAssistantChunk: true, TypeAssistantMessage: true,
	TypeToolCall: true, TypeToolResult: true, TypeToolOutput: true, TypeTodoWrite: true,
	TypeRequestHeader: true, TypeRequestContext: true, TypeInboxSpliced: true,
	TypeEndSeed: true, TypeLLMRetry: true, TypeLLMRetryStarted: true,
	TypeApprovalAsked: true, TypeApprovalDecided: true, TypeApprovalPolicy: true,
	TypeApprovalRevoked: true, TypePermissionMode: true, TypeModelSelected: true,
	TypeQuestionAsked: true, TypeQuestionAnswered: true,
	TypeCompactionStart: true, TypeCompactionSum: true, TypeCompactionPrune: true,
	TypeCompactionEnd: true, TypeSessionTitle: true,
	TypeWorkspaceReady: true, TypeWorkspaceFailed: true, TypeEffortSelected: true,
	TypeSubagentStarted: true, TypeNetworkRefused: true,
}

// IsSurface reports whether events of type t carry a surface op.
func IsSurface(t Type) bool {
	return t == TypeUserMessage || t == TypeAssistantMessage || t == TypeToolResult
}

// TurnStart opens turn Turn (1, 2, ...; continues across forks and restarts).
type TurnStart struct {
	Turn int `json:"turn"`
}

// TurnEnd closes the open turn, exactly once.
type TurnEnd struct {
	Turn   int           `json:"turn"`
	Reason TurnEndReason `json:"reason"`
}

// ReasonKind is why a turn ended.
type ReasonKind string

const (
	ReasonCompleted   ReasonKind = "completed"
	ReasonAborted     ReasonKind = "aborted"
	ReasonBlocked     ReasonKind = "blocked"
	ReasonError       ReasonKind = "error"
	ReasonMaxTokens   ReasonKind = "max-tokens"
	ReasonInterrupted ReasonKind = "interrupted" // written only by crash repair
)

// TurnEndReason is {kind} plus the cause of an abort or the failure of an error.
type TurnEndReason struct {
	Kind  ReasonKind   `json:"kind"`
	Cause *CancelCause `json:"reason,omitempty"`
	Error *llm.Failure `json:"error,omitempty"`
}

// CauseKind is who cancelled a turn.
type CauseKind string

const (
	CauseUser     CauseKind = "user"
	CauseParent   CauseKind = "parent"
	CauseHook     CauseKind = "hook"
	CauseDisposed CauseKind = "disposed"
	CauseShutdown CauseKind = "shutdown"
)

// CancelCause records who cancelled; UserID is set when a person did.
type CancelCause struct {
	Kind   CauseKind `json:"kind"`
	Reason string    `json:"reason,omitempty"`
	UserID string    `json:"userId,omitempty"`
}

// StepBoundary is the data of step/start and step/end. Steps restart at 1 in
// each turn.
type StepBoundary struct {
	Turn int `json:"turn"`
	Step int `json:"step"`
}

// AssistantChunk is one raw stream chunk, logged before it is assembled.
// Chunks never reach the model; failed attempts leave only chunks.
type AssistantChunk struct {
	Turn  int       `json:"turn"`
	Step  int       `json:"step"`
	Chunk llm.Chunk `json:"chunk"`
}

// AssistantMessage records every successful provider call (even with empty
// content), or the visible prefix of a call cancelled mid-stream
// (Interrupted).
type AssistantMessage struct {
	Turn        int         `json:"turn"`
	Step        int         `json:"step"`
	Message     llm.Message `json:"message"`
	Usage       *llm.Usage  `json:"usage,omitempty"`
	Interrupted bool        `json:"interrupted,omitempty"`
	// Price is the route's price list when the request was made (absent
	// when the route has none): the transcript prices Usage with it, so a
	// later price change does not rewrite past costs. Log-only: the
	// model never sees it.
	Price *llm.Price `json:"price,omitempty"`
}

// ToolCall is appended when a call starts; Arguments is the raw model string.
type ToolCall struct {
	Turn      int    `json:"turn"`
	Step      int    `json:"step"`
	CallID    string `json:"callId"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ToolError is the coded part of a failed tool result.
type ToolError struct {
	Name string `json:"name,omitempty"`
	Code string `json:"code,omitempty"`
}

// Tool error codes used by the core.
const (
	CodeToolOutcomeUnknown    = "TOOL_OUTCOME_UNKNOWN"
	CodeToolNotStarted        = "TOOL_NOT_STARTED"
	CodeAbortedBeforeDispatch = "ABORTED_BEFORE_DISPATCH"
	CodeToolAborted           = "ABORTED"
)

// ToolResult carries one tool's result message, committed in model order.
// Meta is presentation data for UIs (exit code, duration, diff), never sent to
// the model.
type ToolResult struct {
	Turn    int             `json:"turn"`
	Step    int             `json:"step"`
	Message llm.Message     `json:"message"`
	Error   *ToolError      `json:"error,omitempty"`
	Meta    json.RawMessage `json:"meta,omitempty"`
}

// ToolOutput is live progress of a running tool (bash output), appended at
// most every 100 ms while the body runs, between its tool/call and tool/result.
// It is log-only: the model sees the final tool/result.
type ToolOutput struct {
	Turn   int    `json:"turn"`
	Step   int    `json:"step"`
	CallID string `json:"callId"`
	Stream string `json:"stream"` // "stdout" or "stderr"
	Text   string `json:"text"`
}

// TodoStatus is the state of one todo item.
type TodoStatus string

const (
	TodoPending    TodoStatus = "pending"
	TodoInProgress TodoStatus = "in_progress"
	TodoCompleted  TodoStatus = "completed"
)

// Todo is one item of the agent's todo list.
type Todo struct {
	Content string     `json:"content"`
	Status  TodoStatus `json:"status"`
}

// TodoWrite replaces the whole todo list; last write wins.
type TodoWrite struct {
	Todos []Todo `json:"todos"`
}

// HeaderReason says why a request/header snapshot was logged.
type HeaderReason string

const (
	HeaderInitial HeaderReason = "initial"
	HeaderResume  HeaderReason = "resume"
	HeaderChange  HeaderReason = "change"
)

// AdapterDefaults marks config fields the adapter filled in (not chosen).
type AdapterDefaults struct {
	ReasoningEffort bool `json:"reasoningEffort,omitempty"`
	MaxTokens       bool `json:"maxTokens,omitempty"`
}

// EpochHeader is everything of a request that is not messages.
type EpochHeader struct {
	Config          llm.CallConfig   `json:"config"`
	AdapterDefaults *AdapterDefaults `json:"adapterDefaults,omitempty"`
	System          string           `json:"system,omitempty"`
	Tools           []llm.ToolSchema `json:"tools,omitempty"`
}

// RequestHeader is a full header snapshot; the latest one is authoritative.
type RequestHeader struct {
	Header EpochHeader  `json:"header"`
	Reason HeaderReason `json:"reason"`
}

// RequestContext records the route's provider, model and capacity when they
// change; it is deliberately not part of header equality.
type RequestContext struct {
	Provider      string `json:"provider"`
	Model         string `json:"model"`
	ContextWindow int64  `json:"contextWindow,omitempty"`
}

// InboxTarget names one of the two inbox lists.
type InboxTarget string

const (
	TargetNextTurn InboxTarget = "next-turn"
	TargetNextStep InboxTarget = "next-step"
)

// Splice outcomes: canceled marks a splice that removed items without
// running them; not_stored one that took back a send the store refused
// (the client was told nothing was kept, and may send it again).
const (
	OutcomeCanceled  = "canceled"
	OutcomeNotStored = "not_stored"
)

// InboxSpliced is one normalized inbox mutation (JS splice semantics on one
// list). A claim is a pure deletion with no Outcome.
type InboxSpliced struct {
	Target       InboxTarget   `json:"target"`
	Start        int           `json:"start"`
	RemovedCount int           `json:"removedCount,omitempty"`
	Inserted     []llm.Message `json:"inserted"`
	Outcome      string        `json:"outcome,omitempty"`
}

// EndSeed marks the end of a seed (fork, import, resume).
type EndSeed struct{}

// LLMRetry is logged before a retry backoff wait.
type LLMRetry struct {
	RetryID    string      `json:"retryId"`
	Turn       int         `json:"turn"`
	Step       int         `json:"step"`
	Provider   string      `json:"provider"`
	Mode       string      `json:"mode"`
	PolicyKey  string      `json:"policyKey,omitempty"`
	Retry      int         `json:"retry"`
	MaxRetries int         `json:"maxRetries,omitempty"`
	DelayMs    int64       `json:"delayMs"`
	Failure    llm.Failure `json:"failure"`
}

// LLMRetryStarted is logged after the wait, before the new request.
type LLMRetryStarted struct {
	RetryID string `json:"retryId"`
	Turn    int    `json:"turn"`
	Step    int    `json:"step"`
	Retry   int    `json:"retry"`
}

// Actor is who did something through a client (answered, changed a mode).
type Actor struct {
	UserID string `json:"userId,omitempty"`
	Name   string `json:"name,omitempty"`
}

// ApprovalAsked opens a durable approval request for a tool call. Preview
// is what the call would do, computed before asking (nil when the tool has
// none or it could not be computed).
type ApprovalAsked struct {
	ID       string           `json:"id"`
	ToolName string           `json:"toolName"`
	CallID   string           `json:"callId,omitempty"`
	Reason   string           `json:"reason,omitempty"`
	Preview  *ApprovalPreview `json:"preview,omitempty"`
}

// PreviewKind says what an approval preview shows.
type PreviewKind string

const (
	PreviewDiff    PreviewKind = "diff"    // a file change: Path, Diff, Added, Removed, Truncated, Created
	PreviewCommand PreviewKind = "command" // a shell command: Command, Description
)

// ApprovalPreview is what a call would do, shown to the approver: the
// unified diff of a file change (against /dev/null when Created), or a
// command line.
type ApprovalPreview struct {
	Kind        PreviewKind `json:"kind"`
	Path        string      `json:"path,omitempty"`
	Diff        string      `json:"diff,omitempty"`
	Added       int         `json:"added,omitempty"`
	Removed     int         `json:"removed,omitempty"`
	Truncated   bool        `json:"truncated,omitempty"`
	Created     bool        `json:"created,omitempty"`
	Command     string      `json:"command,omitempty"`
	Description string      `json:"description,omitempty"`
}

// ApprovalOutcome is how an approval request ended.
type ApprovalOutcome string

const (
	ApprovalAllowedOnce ApprovalOutcome = "allowed-once"
	ApprovalRejected    ApprovalOutcome = "rejected"
	ApprovalCancelled   ApprovalOutcome = "cancelled"
	ApprovalUnavailable ApprovalOutcome = "unavailable"
	// ApprovalAllowedSession allows this call and every later call of the
	// same tool in this session (until approval/revoked). Not upstream:
	// see docs/lifecycle.md.
	ApprovalAllowedSession ApprovalOutcome = "allowed-session"
)

// Allows reports whether the outcome lets the call run.
func (o ApprovalOutcome) Allows() bool {
	return o == ApprovalAllowedOnce || o == ApprovalAllowedSession
}

// ApprovalDecided closes an approval request; By is set when a person
// answered. Tool is the scope of an allowed-session outcome (the tool
// name); it is empty for the other outcomes.
type ApprovalDecided struct {
	ID      string          `json:"id"`
	Outcome ApprovalOutcome `json:"outcome"`
	Tool    string          `json:"tool,omitempty"`
	By      *Actor          `json:"by,omitempty"`
}

// ApprovalRevoked ends an allowed-session scope: calls of Tool need
// approval again. It may be logged at any time, inside a turn or not.
type ApprovalRevoked struct {
	Tool string `json:"tool"`
	By   *Actor `json:"by,omitempty"`
}

// ApprovalPolicy is the approval policy in force; last one wins.
type ApprovalPolicy struct {
	Policy string `json:"policy"` // "ask" or "never"
}

// Approval policies: ask people, or reject without asking anyone.
const (
	ApprovalPolicyAsk   = "ask"
	ApprovalPolicyNever = "never"
)

// PermissionMode is the session's tool permission mode.
type PermissionMode string

const (
	ModeReadOnly PermissionMode = "read-only"
	ModeAsk      PermissionMode = "ask"
	ModeAuto     PermissionMode = "auto"
)

// PermissionModeSet changes the permission mode; last one wins; the default
// (no event) is ask.
type PermissionModeSet struct {
	Mode PermissionMode `json:"mode"`
	By   *Actor         `json:"by,omitempty"`
}

// ModelSelected changes the route used from the next request on.
type ModelSelected struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
	By       *Actor `json:"by,omitempty"`
	// ContextWindow is the route's window when it was selected (0 when
	// unknown), so the live meter shows it before the next request.
	ContextWindow int64 `json:"contextWindow,omitempty"`
}

// QuestionOption is one offered answer.
type QuestionOption struct {
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
}

// Question is one question of an ask_user call.
type Question struct {
	ID          string           `json:"id"`
	Question    string           `json:"question"`
	Header      string           `json:"header,omitempty"`
	Options     []QuestionOption `json:"options,omitempty"`
	MultiSelect bool             `json:"multiSelect,omitempty"`
}

// QuestionAsked opens a durable question batch.
type QuestionAsked struct {
	ID        string     `json:"id"`
	CallID    string     `json:"callId,omitempty"`
	Questions []Question `json:"questions"`
}

// Answer answers one question: chosen option labels and/or free text.
type Answer struct {
	ID       string   `json:"id"`
	Selected []string `json:"selected"`
	Custom   string   `json:"custom,omitempty"`
}

// QuestionOutcome is how a question batch ended.
type QuestionOutcome string

const (
	QuestionAnsweredOutcome QuestionOutcome = "answered"
	QuestionCancelled       QuestionOutcome = "cancelled"
)

// QuestionAnswered closes a question batch.
type QuestionAnswered struct {
	ID      string          `json:"id"`
	Outcome QuestionOutcome `json:"outcome"`
	Answers []Answer        `json:"answers,omitempty"`
	By      *Actor          `json:"by,omitempty"`
}

// SeqRange is an inclusive range of surface positions (seqs).
type SeqRange struct {
	Start int64 `json:"start"`
	End   int64 `json:"end"`
}

// CompactionStart opens a compaction bracket; Turn is nil for a manual
// compaction between turns.
type CompactionStart struct {
	CompactionID    string `json:"compactionId"`
	SourceCommandID string `json:"sourceCommandId,omitempty"`
	Turn            *int   `json:"turn"`
}

// CompactionSummary is immediately followed by the replacing user/message.
type CompactionSummary struct {
	CompactionID       string             `json:"compactionId"`
	Summary            []llm.ContentBlock `json:"summary"`
	ShadowedRange      SeqRange           `json:"shadowedRange"`
	ShadowedSeqs       []int64            `json:"shadowedSeqs"`
	ShadowedTokenCount int64              `json:"shadowedTokenCount"`
	Provider           string             `json:"provider"`
	Model              string             `json:"model"`
	MaxTokens          int                `json:"maxTokens,omitempty"`
	Usage              *llm.Usage         `json:"usage,omitempty"`
}

// CompactionPrune is immediately followed by the replacing tool/result.
type CompactionPrune struct {
	ShadowedRange      SeqRange `json:"shadowedRange"`
	ShadowedSeqs       []int64  `json:"shadowedSeqs"`
	ShadowedTokenCount int64    `json:"shadowedTokenCount"`
}

// CompactionEnd closes a compaction bracket, exactly once.
type CompactionEnd struct {
	CompactionID string `json:"compactionId"`
	Turn         *int   `json:"turn"`
	Error        string `json:"error,omitempty"`
}

// TitleSource says where a title came from; a user title pins it.
type TitleSource string

const (
	TitleUser     TitleSource = "user"
	TitleFallback TitleSource = "fallback"
	TitleModel    TitleSource = "model"
)

// SessionTitle sets the session's title; last one wins.
type SessionTitle struct {
	Title  string      `json:"title"`
	Source TitleSource `json:"source"`
	By     *Actor      `json:"by,omitempty"`
}
