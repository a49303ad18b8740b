package tools

import (
	"context"
	"fmt"

	"harness/internal/llm"
	"harness/internal/session"
)

// PreKind is a pre-execute decision.
type PreKind string

const (
	PreAllow PreKind = "allow"
	PreDeny  PreKind = "deny"
	PreAsk   PreKind = "ask"
)

// PreDecision is the outcome of the pre-execute waterfall. Reason is shown
// to the model on deny and to the approver on ask.
type PreDecision struct {
	Kind   PreKind `json:"kind"`
	Reason string  `json:"reason,omitempty"`
}

// PreHook is one pre-execute listener: call next to delegate to later hooks
// (the default is allow); return without calling it to short-circuit. It
// cannot rewrite arguments: they are already logged.
type PreHook func(ctx context.Context, call *Call, next func(context.Context) PreDecision) PreDecision

// PostKind is a post-execute decision.
type PostKind string

const (
	PostAccept PostKind = "accept"
	PostBlock  PostKind = "block"
)

// PostDecision is the outcome of the post-execute waterfall. Accept may
// replace the content (nil keeps it); block turns the result into an error
// whose content is Feedback and drops the body's contexts. Contexts listed
// here are appended in both cases.
type PostDecision struct {
	Kind               PostKind           `json:"kind"`
	Content            []llm.ContentBlock `json:"content,omitempty"`
	Feedback           string             `json:"feedback,omitempty"`
	AdditionalContexts []llm.Message      `json:"additionalContexts,omitempty"`
}

// PostHook is one post-execute listener (waterfall, default accept).
type PostHook func(ctx context.Context, call *Call, r Result, next func(context.Context) PostDecision) PostDecision

// Guard is a monotonic deny-only check run after an allow; a non-empty
// return denies the call.
type Guard func(ctx context.Context, call *Call) (denyReason string)

// ExecuteHook wraps the body (metrics, retries, deadlines). It may hand next
// a derived context; caller cancellation still reaches the body.
type ExecuteHook func(ctx context.Context, call *Call, next func(context.Context) (Result, error)) (Result, error)

// PermissionHook enforces the session's permission mode: read and interact
// tools are always allowed; network tools are denied while the session's
// network policy is off; write, exec and network tools (and tools of
// unknown access, failing closed) are denied in read-only mode, need approval in ask
// mode (the default), and run freely in auto mode. Later hooks run first, so
// their denials stand.
func PermissionHook() PreHook {
	return func(ctx context.Context, call *Call, next func(context.Context) PreDecision) PreDecision {
		d := next(ctx)
		if d.Kind == PreDeny {
			return d
		}
		if call.Access == AccessRead || call.Access == AccessInteract {
			return d
		}
		// Nobody is asked to approve a call the network policy refuses.
		if call.Access == AccessNetwork && (call.Env == nil || !call.Env.Network(ctx)) {
			return PreDecision{Kind: PreDeny, Reason: fmt.Sprintf(
				"the network is off for this session, so %q cannot run; an admin can turn it on for the session or its model route", call.Name)}
		}
		mode := session.ModeAsk
		if call.Env != nil && call.Env.PermissionMode() != "" {
			mode = call.Env.PermissionMode()
		}
		switch mode {
		case session.ModeAuto:
			return d
		case session.ModeReadOnly:
			return PreDecision{Kind: PreDeny, Reason: fmt.Sprintf(
				"the session is in read-only mode, so %q (%s access) is not allowed; use read-only tools, or ask the user to switch the permission mode",
				call.Name, accessLabel(call.Access))}
		default:
			reason := d.Reason
			if reason == "" {
				reason = fmt.Sprintf("%q needs approval (%s access)", call.Name, accessLabel(call.Access))
			}
			return PreDecision{Kind: PreAsk, Reason: reason}
		}
	}
}

func accessLabel(a Access) string {
	if a == "" {
		return "unknown"
	}
	return string(a)
}

// denialReason explains a non-allowed approval outcome so the model can tell
// a human "no" from a withdrawn request or a missing approval channel.
func denialReason(call *Call, outcome session.ApprovalOutcome) string {
	switch outcome {
	case session.ApprovalRejected:
		return fmt.Sprintf("the user rejected this %q call; do not retry it unchanged — ask the user or choose another approach", call.Name)
	case session.ApprovalCancelled:
		return fmt.Sprintf("the approval request for this %q call was withdrawn before anyone answered (the turn was cancelled or ended)", call.Name)
	case session.ApprovalUnavailable:
		return fmt.Sprintf("this %q call requires approval, but no approval channel is available in this session", call.Name)
	default:
		return fmt.Sprintf("this %q call was not approved (outcome %q)", call.Name, outcome)
	}
}
