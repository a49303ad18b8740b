package render

import (
	"hash/fnv"
	"strconv"
	"strings"

	"harness/internal/llm"
	"harness/internal/session"
	"harness/internal/tools/builtin"
)

// Item is one row of a transcript. Every item has a DOM id derived from the
// log (so a live fragment and a reloaded page address the same element)
// and the seq of the event that opened it (history paging reads the
// smallest one on the page).
type Item interface {
	ItemID() string
	ItemSeq() int64
}

// Base carries what every item has.
type Base struct {
	ID  string
	Seq int64
	// Time is the opening event's time (epoch ms).
	Time int64
}

func (b Base) ItemID() string  { return b.ID }
func (b Base) ItemSeq() int64  { return b.Seq }
func (b Base) SeqAttr() string { return strconv.FormatInt(b.Seq, 10) }

// UserItem is a person's message.
type UserItem struct {
	Base
	Text string
	// Author is the sender's display name; ShowAuthor is set when someone
	// other than the viewer wrote it (shared sessions).
	Author     string
	ShowAuthor bool
	// authorID is the sender's user id (a live fragment sets ShowAuthor
	// per viewer).
	authorID string
	// Images are the message's images, in order.
	Images []ImageView
}

// ImageView is an image of a user bubble: a stored attachment, linked at
// URL (the page's own attachment route), with what the log says of it.
type ImageView struct {
	ID, URL, MediaType, Name string
	Size                     int64
	Width, Height            int
}

// Alt is the image's text alternative: its name (if any), type and size
// in pixels ("shot.png, PNG image, 640 × 480").
func (v ImageView) Alt() string {
	kind := strings.ToUpper(strings.TrimPrefix(v.MediaType, "image/")) + " image"
	if v.MediaType == "" {
		kind = "Image"
	}
	s := kind
	if v.Width > 0 && v.Height > 0 {
		s += ", " + strconv.Itoa(v.Width) + " × " + strconv.Itoa(v.Height)
	}
	if v.Name != "" {
		s = v.Name + ", " + s
	}
	return s
}

// Label names the link that opens the image full size.
func (v ImageView) Label() string { return "Open the image full size: " + v.Alt() }

// WidthAttr and HeightAttr are the img's size attributes ("" when the log
// does not say), so the bubble keeps its place while the image loads.
func (v ImageView) WidthAttr() string  { return dim(v.Width) }
func (v ImageView) HeightAttr() string { return dim(v.Height) }

func dim(n int) string {
	if n <= 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// ReasoningItem is a reasoning block (collapsed by default).
type ReasoningItem struct {
	Base
	Text      string
	Streaming bool
}

// TextItem is an assistant text block rendered as markdown.
type TextItem struct {
	Base
	HTML      string // sanitised
	Raw       string // the markdown source (copy button)
	Streaming bool
}

// ToolCallDraftItem is a tool call the model is still writing.
type ToolCallDraftItem struct {
	Base
	Name string
}

// ToolStatus is a tool card's state.
type ToolStatus string

const (
	ToolRunning ToolStatus = "running"
	ToolOK      ToolStatus = "ok"
	ToolFailed  ToolStatus = "error"
	ToolAborted ToolStatus = "aborted"
)

// ToolItem is one tool call with its live output and result.
type ToolItem struct {
	Base
	Turn      int
	CallID    string
	Name      string
	Arguments string
	Status    ToolStatus
	// Output is the live output (tool/output) before the result arrives.
	Output string
	// Result is the result text the model saw.
	Result    string
	ErrorCode string
	// Presentation data from the result's meta, by tool.
	Bash   *builtin.BashMeta
	Change *builtin.FileChangeMeta
	Read   *builtin.ReadMeta
	Search *builtin.SearchMeta
	Todos  []session.Todo
	Asked  *AskMeta
	// Subagent is a task call's child (subagent/started and the result's
	// meta).
	Subagent *SubagentView
	// Images are images the tool stored with the session (an MCP server's
	// image content), listed in its result's meta.
	Images []ImageView
}

// AskMeta is the meta of an ask_user result.
type AskMeta struct {
	Questions []session.Question `json:"questions"`
	Answers   []session.Answer   `json:"answers"`
}

// ApprovalItem is an approval request and, once decided, its outcome.
type ApprovalItem struct {
	Base
	ApprovalID string
	ToolName   string
	CallID     string
	Reason     string
	Outcome    session.ApprovalOutcome
	By         string
}

// QuestionItem is an ask_user question batch and, once closed, its outcome.
type QuestionItem struct {
	Base
	QuestionID string
	Questions  []session.Question
	Outcome    session.QuestionOutcome
	Answers    []session.Answer
	By         string
}

// RetryItem is a retry streak of one step: the last failure, the attempt
// and when the next attempt starts (Until, epoch ms; the page counts down).
type RetryItem struct {
	Base
	Retry      int
	MaxRetries int
	Until      int64
	Started    bool
	Code       string
	Message    string
}

// ErrorItem is a turn that ended with a model failure. Turn is the failed
// turn: its row offers to send the turn's prompt again (the retry op).
type ErrorItem struct {
	Base
	Turn    int
	Code    string
	Status  int
	Message string
}

// NoticeKind is the kind of a notice row.
type NoticeKind string

const (
	NoticeAborted     NoticeKind = "aborted"
	NoticeInterrupted NoticeKind = "interrupted"
	NoticeMaxTokens   NoticeKind = "max-tokens"
	NoticeBlocked     NoticeKind = "blocked"
	NoticeCompaction  NoticeKind = "compaction"
	NoticeMode        NoticeKind = "mode"
	NoticeModel       NoticeKind = "model"
	NoticeInterrupt   NoticeKind = "partial"
	NoticeWorkspace   NoticeKind = "workspace"
	NoticeWorkspaceKO NoticeKind = "workspace-failed"
	NoticeNetwork     NoticeKind = "network"
)

// NoticeItem is a one-line notice (stopped, interrupted, max tokens,
// compaction, mode or model changed).
type NoticeItem struct {
	Base
	Kind NoticeKind
	Text string
}

// UsageItem is the figures of a turn, shown at its end: every one is a
// function of the turn's events in reach (see Projection.apply).
type UsageItem struct {
	Base
	Turn  int
	Usage llm.Usage
	// Requests is how many model requests the figures sum (1 for a step).
	Requests int
	TurnEnd  bool
	// DurationMs is turn/start to turn/end in event time; HasDuration is
	// false when the turn/start is out of reach (a page cut mid-turn).
	DurationMs  int64
	HasDuration bool
	// TTFTMs is the time to first token of the turn's first model request
	// that streamed: from its step/start (or llm/retry-started, when it
	// was a retry) to its first delta chunk.
	TTFTMs  int64
	HasTTFT bool
	// Cost sums Price.Cost over the Priced requests (those whose
	// assistant/message carried the route's price).
	Cost   float64
	Priced int
	// Figures are the turn's share of the session figures (the footer),
	// complete at its turn/end.
	Figures SessionFigures
	// startedAt is the turn/start's event time while the turn is open.
	startedAt int64
}

// ShowCost: every request of the turn in reach was priced; a partly
// priced turn shows no cost rather than an understated one.
func (u UsageItem) ShowCost() bool { return u.Requests > 0 && u.Priced == u.Requests }

// CachedTokens is the prompt tokens served from the cache.
func (u UsageItem) CachedTokens() int64 { return u.Usage.CacheReadTokens }

// CacheHitPercent is the share of prompt tokens served from the cache.
func (u UsageItem) CacheHitPercent() int {
	prompt := u.Usage.InputTokens + u.Usage.CacheReadTokens + u.Usage.CacheWriteTokens
	if prompt == 0 {
		return 0
	}
	return int(u.Usage.CacheReadTokens * 100 / prompt)
}

// Prompt is every prompt token (billed input).
func (u UsageItem) Prompt() int64 {
	return u.Usage.InputTokens + u.Usage.CacheReadTokens + u.Usage.CacheWriteTokens
}

// DOM ids. They only hold [A-Za-z0-9_-], whatever the log contains.

func blockPrefix(turn, step int) string {
	return "b-" + strconv.Itoa(turn) + "-" + strconv.Itoa(step) + "-"
}

// BlockID is the id of block index of a step's model response.
func BlockID(turn, step, index int) string { return blockPrefix(turn, step) + strconv.Itoa(index) }

// ToolID is a tool card's id.
func ToolID(turn int, callID string) string { return "t-" + strconv.Itoa(turn) + "-" + safeID(callID) }

func userID(msgID string) string          { return "u-" + safeID(msgID) }
func approvalID(id string) string         { return "a-" + safeID(id) }
func questionID(id string) string         { return "q-" + safeID(id) }
func retryID(turn, step int) string       { return "r-" + strconv.Itoa(turn) + "-" + strconv.Itoa(step) }
func turnUsageID(turn int) string         { return "ut-" + strconv.Itoa(turn) }
func seqID(prefix string, s int64) string { return prefix + "-" + strconv.FormatInt(s, 10) }

// safeID keeps ids that are already safe and hashes the rest, so a
// model-chosen call id can never break out of an attribute or collide with
// the page's own ids.
func safeID(s string) string {
	if s != "" && len(s) <= 64 && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-')
	}) < 0 {
		return s
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(s))
	return "h" + strconv.FormatUint(h.Sum64(), 36)
}
