package fake

import (
	"context"
	"fmt"
	"log/slog"

	"harness/internal/llm"
	"harness/internal/llm/openai"
)

// Demo route identity.
const (
	DemoProvider = "demo"
	DemoModel    = "demo"
	DemoLabel    = "Offline demo model"
)

// StartDemo starts the demo model in-process on a random loopback port and
// returns an openai-adapter Provider for it (name "demo", Offline) and a
// function that stops the server. ctx bounds the start only. Options tune
// the demo server (e.g. WithChunkDelay(0) for tests and load tests).
func StartDemo(ctx context.Context, log *slog.Logger, opts ...Option) (llm.Provider, func(), error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	srv := NewDemo(append([]Option{WithLogger(log), WithoutRecords()}, opts...)...)
	url, err := srv.listen(ctx, "127.0.0.1:0")
	if err != nil {
		return nil, nil, fmt.Errorf("start demo model: %w", err)
	}
	stop := func() {
		if err := srv.Close(); err != nil {
			log.Warn("stop demo model", "err", err)
		}
	}
	p, err := openai.New(openai.Config{
		Name: DemoProvider, Label: DemoLabel, Kind: openai.KindDeepSeek, Offline: true,
		BaseURL: url, DefaultModel: DemoModel, Thinking: true, DefaultEffort: llm.EffortHigh,
		// The demo describes the images it receives (images.go).
		ImageInput: true,
		Models: []llm.ModelInfo{{
			ID: DemoModel, Label: DemoLabel, ContextWindow: 128_000, DefaultMaxTokens: 8_192,
			Efforts: openai.DeepSeekEfforts(), DefaultEffort: llm.EffortHigh,
		}},
	})
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("start demo model: %w", err)
	}
	log.Info("offline demo model listening", "url", url)
	return p, stop, nil
}
