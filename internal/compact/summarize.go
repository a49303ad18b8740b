package compact

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"harness/internal/llm"
	"harness/internal/session"
)

// Checkpoint tags around the summary inside the checkpoint message.
const (
	SummaryOpenTag  = "<compacted-summary>"
	SummaryCloseTag = "</compacted-summary>"
)

// summaryInstruction is the final user message of the summary call. The
// call replays the conversation's own system prompt, tools and messages, so
// only this message is new to the provider's prefix cache.
const summaryInstruction = `Stop working on the task for a moment: your job now is to write a checkpoint of the conversation above, so that the work can continue from it alone, with nothing essential lost.

Write exactly the Markdown below, keeping all eight sections in this order. Use short bullets. Write "(none)" under a section that has nothing; never leave a section out.

## Primary Request and Intent
- [the user's original goal and how it evolved; quote the user's own words where they matter]

## Key Technical Concepts
- [technologies, frameworks, conventions and patterns involved]

## Files and Code
- [exact path: why it matters, what changed, key snippets]

## Errors and Fixes
- [each error and how it was fixed, with any user feedback]

## Pending Jobs
- [work the user asked for that is not done yet]

## Current Work
- [exactly what was in progress when this checkpoint was written]

## Next Step
- [the one next action that follows from the latest request, or "(none)"]

## Critical Context
- [decisions and why, constraints, user preferences, open questions, data needed to go on]

Rules:
- Keep exact file paths, commands, error messages, identifiers, numbers and signatures.
- Record the user's instructions and corrections faithfully.
- Do not mention this request or that the conversation is being condensed.
- Answer with the checkpoint text only; do not call any tool.
- If the conversation already contains a ` + SummaryOpenTag + ` block, it is an earlier checkpoint: merge it into this one, keeping what is still true and dropping what is stale, rather than copying it.`

// checkpointPreamble opens the checkpoint message.
const checkpointPreamble = "This is an automatic checkpoint that condenses the earlier part of this conversation to free context space. Treat it as established background and build on it without repeating it. Continue the work directly from the messages that follow, without acknowledging this checkpoint."

// summaryInput is what a summary call replays.
type summaryInput struct {
	header   session.EpochHeader
	messages []llm.Message
}

// summary is a summary call's outcome.
type summary struct {
	blocks    []llm.ContentBlock // text blocks only
	provider  string
	model     string
	maxTokens int
	usage     *llm.Usage
}

// summarize makes the one summary call through the session's provider: the
// conversation's last logged system prompt and tools, the shadowed messages
// verbatim, then the instruction. Only text blocks are kept; an error,
// abort or max-tokens finish, images or an empty text are failures.
func summarize(ctx context.Context, reg *llm.Registry, sessionID string, in summaryInput, maxTokens int) (summary, error) {
	cfg := in.header.Config
	prov, ok := reg.Get(cfg.Provider)
	if !ok {
		return summary{}, fmt.Errorf("summarize: provider %q is not configured", cfg.Provider)
	}
	msgs := append(append(make([]llm.Message, 0, len(in.messages)+1), in.messages...),
		llm.UserText(summaryInstruction, llm.Source{Kind: llm.SourcePlugin, Plugin: llm.PluginCompact, Form: llm.FormInstructions}))
	req := llm.Request{
		CallConfig: llm.CallConfig{Provider: cfg.Provider, Model: cfg.Model, MaxTokens: maxTokens},
		System:     in.header.System,
		Tools:      in.header.Tools,
		Messages:   msgs,
		SessionID:  sessionID,
		Purpose:    llm.PurposeCompaction,
	}
	var asm llm.Assembler
	if err := llm.Run(ctx, prov, req, func(c llm.Chunk) error { asm.Add(c); return nil }); err != nil {
		return summary{}, fmt.Errorf("summarize: %w", err)
	}
	switch fin := asm.Finish(); fin.Kind {
	case llm.FinishError, llm.FinishAborted:
		if fin.Failure != nil {
			return summary{}, fmt.Errorf("summarize: %w", fin.Failure)
		}
		return summary{}, fmt.Errorf("summarize: request %s", fin.Kind)
	case llm.FinishMaxTokens:
		return summary{}, errors.New("summarize: the summary was cut at the token cap")
	}
	var blocks []llm.ContentBlock
	nonEmpty := false
	for _, b := range asm.Message("", llm.Source{}).Content {
		switch b.Type {
		case llm.BlockImage:
			return summary{}, &llm.Failure{Code: llm.CodeUnsupportedContent, Message: "a compaction summary cannot contain images"}
		case llm.BlockText:
			blocks = append(blocks, llm.Text(b.Text))
			nonEmpty = nonEmpty || strings.TrimSpace(b.Text) != ""
		}
	}
	if !nonEmpty {
		return summary{}, errors.New("summarize: the model returned no summary text")
	}
	return summary{blocks: blocks, provider: cfg.Provider, model: cfg.Model, maxTokens: maxTokens, usage: asm.Usage()}, nil
}

// CheckpointContent frames summary blocks as a checkpoint message's
// content: a fixed preamble ending with SummaryOpenTag, the summary, then
// SummaryCloseTag.
func CheckpointContent(blocks []llm.ContentBlock) []llm.ContentBlock {
	out := make([]llm.ContentBlock, 0, len(blocks)+2)
	out = append(out, llm.Text(checkpointPreamble+"\n\n"+SummaryOpenTag))
	out = append(out, blocks...)
	return append(out, llm.Text(SummaryCloseTag))
}

// checkpointMessage is the user message that replaces a compacted span.
func checkpointMessage(compactionID string, blocks []llm.ContentBlock) llm.Message {
	return llm.Message{
		ID:      llm.NewID(),
		Role:    llm.RoleUser,
		Content: CheckpointContent(blocks),
		Source:  llm.Source{Kind: llm.SourcePlugin, Plugin: llm.PluginCompact, CompactionID: compactionID},
	}
}
