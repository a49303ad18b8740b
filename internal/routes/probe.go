package routes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"harness/internal/llm"
	"harness/internal/models"
)

// probeTimeout bounds a connection test: an admin waits for the answer.
const probeTimeout = 20 * time.Second

// Test sends one tiny request (one user word, one output token) through
// the stored route name as it is saved, enabled or not, and returns nil
// when the provider answered. A failure is the provider's *llm.Failure
// (its code is what the page shows); a route that is not stored or whose
// row does not build is an *InputError.
func (r *Routes) Test(ctx context.Context, name string) error {
	pc, err := r.store.Provider(ctx, name)
	if errors.Is(err, models.ErrNotFound) {
		return inputf("only routes stored in Settings can be tested here")
	}
	if err != nil {
		return err
	}
	if pc.KeyError != nil {
		return &llm.Failure{Code: llm.CodeAuth, Message: "the stored API key cannot be opened; enter it again"}
	}
	cfg, err := storedConfig(pc)
	if err != nil {
		return inputf("%s", err)
	}
	p, err := r.build(cfg)
	if err != nil {
		return inputf("route %s: %s", name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	req := llm.Request{
		CallConfig: llm.CallConfig{Provider: name, Model: cfg.DefaultModel, MaxTokens: 1},
		Messages:   []llm.Message{llm.UserText("ping", llm.Source{Kind: llm.SourceUser})},
	}
	var fin *llm.Chunk
	err = llm.Run(ctx, p, req, func(c llm.Chunk) error {
		if c.Type == llm.ChunkFinish {
			fin = &c
		}
		return nil
	})
	if err != nil {
		return llm.AsFailure(err)
	}
	if fin != nil && fin.Reason != nil && fin.Reason.Failure != nil {
		f := *fin.Reason.Failure
		// The adapter never puts the key in a failure; a provider may echo
		// it in its error body, so it is cut here too.
		if pc.APIKey != "" {
			f.Message = strings.ReplaceAll(f.Message, pc.APIKey, "[redacted]")
		}
		return &f
	}
	return nil
}

// TestFailure is the coded failure of a connection test, nil for none.
func TestFailure(err error) *llm.Failure {
	if f, ok := errors.AsType[*llm.Failure](err); ok {
		return f
	}
	if err != nil {
		return &llm.Failure{Code: llm.CodeUnknown, Message: fmt.Sprint(err)}
	}
	return nil
}
