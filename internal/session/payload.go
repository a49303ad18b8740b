package session

import (
	"bytes"
	"encoding/json"
	"reflect"
	"unicode/utf8"

	"harness/internal/llm"
)

// maxSafeInteger is JavaScript's Number.MAX_SAFE_INTEGER: times and seqs must
// survive a round trip through a browser.
const maxSafeInteger = 1<<53 - 1

// typeHeaderDelta is a legacy upstream type that is refused everywhere, even
// when marked ignorable.
const typeHeaderDelta Type = "request/header-delta"

// payloadType returns t's data type, or nil for a type outside the
// vocabulary.
func payloadType(t Type) reflect.Type {
	switch t {
	case TypeTurnStart:
		return reflect.TypeFor[TurnStart]()
	case TypeTurnEnd:
		return reflect.TypeFor[TurnEnd]()
	case TypeStepStart, TypeStepEnd:
		return reflect.TypeFor[StepBoundary]()
	case TypeUserMessage:
		return reflect.TypeFor[llm.Message]()
	case TypeAssistantChunk:
		return reflect.TypeFor[AssistantChunk]()
	case TypeAssistantMessage:
		return reflect.TypeFor[AssistantMessage]()
	case TypeToolCall:
		return reflect.TypeFor[ToolCall]()
	case TypeToolResult:
		return reflect.TypeFor[ToolResult]()
	case TypeToolOutput:
		return reflect.TypeFor[ToolOutput]()
	case TypeTodoWrite:
		return reflect.TypeFor[TodoWrite]()
	case TypeRequestHeader:
		return reflect.TypeFor[RequestHeader]()
	case TypeRequestContext:
		return reflect.TypeFor[RequestContext]()
	case TypeInboxSpliced:
		return reflect.TypeFor[InboxSpliced]()
	case TypeEndSeed:
		return reflect.TypeFor[EndSeed]()
	case TypeLLMRetry:
		return reflect.TypeFor[LLMRetry]()
	case TypeLLMRetryStarted:
		return reflect.TypeFor[LLMRetryStarted]()
	case TypeApprovalAsked:
		return reflect.TypeFor[ApprovalAsked]()
	case TypeApprovalDecided:
		return reflect.TypeFor[ApprovalDecided]()
	case TypeApprovalPolicy:
		return reflect.TypeFor[ApprovalPolicy]()
	case TypeApprovalRevoked:
		return reflect.TypeFor[ApprovalRevoked]()
	case TypePermissionMode:
		return reflect.TypeFor[PermissionModeSet]()
	case TypeModelSelected:
		return reflect.TypeFor[ModelSelected]()
	case TypeEffortSelected:
		return reflect.TypeFor[EffortSelected]()
	case TypeQuestionAsked:
		return reflect.TypeFor[QuestionAsked]()
	case TypeQuestionAnswered:
		return reflect.TypeFor[QuestionAnswered]()
	case TypeCompactionStart:
		return reflect.TypeFor[CompactionStart]()
	case TypeCompactionSum:
		return reflect.TypeFor[CompactionSummary]()
	case TypeCompactionPrune:
		return reflect.TypeFor[CompactionPrune]()
	case TypeCompactionEnd:
		return reflect.TypeFor[CompactionEnd]()
	case TypeSessionTitle:
		return reflect.TypeFor[SessionTitle]()
	case TypeWorkspaceReady:
		return reflect.TypeFor[WorkspaceReady]()
	case TypeWorkspaceFailed:
		return reflect.TypeFor[WorkspaceFailed]()
	case TypeSubagentStarted:
		return reflect.TypeFor[SubagentStarted]()
	case TypeNetworkRefused:
		return reflect.TypeFor[NetworkRefused]()
	}
	return nil
}

// payloadFor returns a pointer to a zero value of t's data type, or nil.
func payloadFor(t Type) any {
	rt := payloadType(t)
	if rt == nil {
		return nil
	}
	return reflect.New(rt).Interface()
}

// folded reports whether the log itself reads t's data (state fold, surface,
// derived messages). Those are always decoded from the stored bytes, so the
// log never keeps a reference into a caller's value.
func folded(t Type) bool {
	switch t {
	case TypeTurnStart, TypeTurnEnd, TypeStepStart, TypeStepEnd,
		TypeUserMessage, TypeAssistantMessage, TypeToolResult,
		TypeTodoWrite, TypeRequestHeader, TypePermissionMode,
		TypeModelSelected, TypeEffortSelected, TypeSessionTitle,
		TypeApprovalDecided, TypeApprovalRevoked:
		return true
	}
	return false
}

// isPayloadOf reports whether data is a value of (or pointer to) t's data
// type: such data was produced by encoding/json from the right Go type, so
// decoding it again only to validate it would be wasted work.
func isPayloadOf(t Type, data any) bool {
	rt := payloadType(t)
	if rt == nil || data == nil {
		return false
	}
	dt := reflect.TypeOf(data)
	return dt == rt || dt == reflect.PointerTo(rt)
}

// decodePayload checks that raw is t's data type and returns the decoded
// value (a pointer from payloadFor) when the log folds it. typed means the
// bytes were just marshalled from t's Go type.
func decodePayload(t Type, raw []byte, typed bool) (any, error) {
	if payloadType(t) == nil || (typed && !folded(t)) {
		return nil, nil
	}
	p := payloadFor(t)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, errorf(CodeInvalidData, "data must be a JSON object")
	}
	if err := json.Unmarshal(raw, p); err != nil {
		return nil, errorf(CodeInvalidData, "data does not match %s: %v", t, err)
	}
	if !folded(t) {
		return nil, nil
	}
	return p, nil
}

// encodeData marshals an Append argument once. Raw JSON arguments are
// validated and compacted into bytes the log owns.
func encodeData(data any) (json.RawMessage, error) {
	switch v := data.(type) {
	case nil:
		return nil, errorf(CodeInvalidData, "data is nil (use an empty struct such as EndSeed{})")
	case json.RawMessage:
		return ownJSON(v)
	case []byte:
		return ownJSON(v)
	}
	b, err := json.Marshal(data)
	if err != nil {
		return nil, errorf(CodeInvalidData, "data is not lossless JSON: %v", err)
	}
	if bytes.Equal(b, []byte("null")) {
		return nil, errorf(CodeInvalidData, "data encodes as null")
	}
	return b, nil
}

// ownJSON validates b and returns a compacted copy.
func ownJSON(b []byte) (json.RawMessage, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, errorf(CodeInvalidData, "data is empty")
	}
	if !utf8.Valid(b) {
		return nil, errorf(CodeInvalidData, "data is not valid UTF-8")
	}
	var buf bytes.Buffer
	buf.Grow(len(b))
	if err := json.Compact(&buf, b); err != nil {
		return nil, errorf(CodeInvalidData, "data is not valid JSON: %v", err)
	}
	return buf.Bytes(), nil
}

// projectMessage checks a surface event's message shape (§1.1) and returns its
// model projection (§1.5): nil when it projects to nothing.
func projectMessage(t Type, payload any) (*llm.Message, error) {
	switch t {
	case TypeUserMessage:
		m := payload.(*llm.Message)
		if err := checkMessage(*m, llm.RoleUser); err != nil {
			return nil, err
		}
		return m, nil
	case TypeAssistantMessage:
		am := payload.(*AssistantMessage)
		m := &am.Message
		if err := checkMessage(*m, llm.RoleAssistant); err != nil {
			return nil, err
		}
		if m.Source.Kind != llm.SourceModel || m.Source.Provider == "" || m.Source.Model == "" {
			return nil, errorf(CodeInvalidMessage, "assistant message %s: source must be {kind: model, provider, model}", m.ID)
		}
		if len(m.Content) == 0 {
			return nil, nil // holds only usage/provenance (§1.5)
		}
		return m, nil
	case TypeToolResult:
		m := &payload.(*ToolResult).Message
		if err := checkMessage(*m, llm.RoleUser); err != nil {
			return nil, err
		}
		if m.Source.Kind != llm.SourceTool || m.Source.CallID == "" {
			return nil, errorf(CodeInvalidMessage, "tool result %s: source must be {kind: tool, callId}", m.ID)
		}
		if len(m.Content) != 1 || m.Content[0].Type != llm.BlockToolResult || m.Content[0].ToolCallID != m.Source.CallID {
			return nil, errorf(CodeInvalidMessage, "tool result %s: content must be exactly one tool-result block for call %s", m.ID, m.Source.CallID)
		}
		return m, nil
	}
	return nil, nil
}

func checkMessage(m llm.Message, role llm.Role) error {
	if err := m.Validate(); err != nil {
		return errorf(CodeInvalidMessage, "%v", err)
	}
	if m.Role != role {
		return errorf(CodeInvalidMessage, "message %s: role %q, want %q", m.ID, m.Role, role)
	}
	return nil
}

// checkRequestHeader applies the request/header rules of §1.1 that need to
// see which keys are present, not only their decoded values.
func checkRequestHeader(raw []byte, rh *RequestHeader) error {
	switch rh.Reason {
	case HeaderInitial, HeaderResume, HeaderChange:
	default:
		return errorf(CodeInvalidData, "request/header reason %q is not initial, resume or change", rh.Reason)
	}
	cfg := rh.Header.Config
	if cfg.Provider == "" || cfg.Model == "" {
		return errorf(CodeInvalidData, "request/header config needs a provider and a model")
	}
	var present struct {
		Header struct {
			Config struct {
				ReasoningEffort *string         `json:"reasoningEffort"`
				MaxTokens       json.RawMessage `json:"maxTokens"`
			} `json:"config"`
			AdapterDefaults map[string]json.RawMessage `json:"adapterDefaults"`
		} `json:"header"`
	}
	if err := json.Unmarshal(raw, &present); err != nil {
		return errorf(CodeInvalidData, "request/header: %v", err)
	}
	h := present.Header
	if h.Config.ReasoningEffort != nil && *h.Config.ReasoningEffort == "" {
		return errorf(CodeInvalidData, "request/header reasoningEffort is empty")
	}
	for k, v := range h.AdapterDefaults {
		if string(v) != "true" {
			return errorf(CodeInvalidData, "request/header adapterDefaults.%s must be true", k)
		}
		switch {
		case k == "reasoningEffort" && h.Config.ReasoningEffort != nil:
		case k == "maxTokens" && h.Config.MaxTokens != nil:
		default:
			return errorf(CodeInvalidData, "request/header adapterDefaults.%s does not mark a config field", k)
		}
	}
	return nil
}

// checkApprovalScope applies the rules of the allowed-session vocabulary:
// an allowed-session decision names its tool, other decisions name none,
// and a revocation names a tool.
func checkApprovalScope(t Type, payload any) error {
	switch t {
	case TypeApprovalDecided:
		d := payload.(*ApprovalDecided)
		if d.Outcome == ApprovalAllowedSession && d.Tool == "" {
			return errorf(CodeInvalidData, "approval/decided %s: an allowed-session outcome needs a tool", d.ID)
		}
		if d.Outcome != ApprovalAllowedSession && d.Tool != "" {
			return errorf(CodeInvalidData, "approval/decided %s: only an allowed-session outcome has a tool", d.ID)
		}
	case TypeApprovalRevoked:
		if payload.(*ApprovalRevoked).Tool == "" {
			return errorf(CodeInvalidData, "approval/revoked needs a tool")
		}
	}
	return nil
}
