package llm

import (
	"context"
	"errors"
	"testing"
)

func TestRun(t *testing.T) {
	t.Parallel()
	text := textDelta(0, "hi")
	tests := []struct {
		name     string
		provider Provider
		cancel   bool
		types    []ChunkType
		finish   FinishKind
		code     Code
	}{
		{
			name:     "provider finish passes through once",
			provider: &stubProvider{chunks: []Chunk{text, Finish(FinishStop, nil), text, Finish(FinishStop, nil)}},
			types:    []ChunkType{ChunkTextDelta, ChunkFinish},
			finish:   FinishStop,
		},
		{
			name:     "failure becomes finish error",
			provider: &stubProvider{chunks: []Chunk{text}, err: Errorf(CodeRateLimit, "slow down")},
			types:    []ChunkType{ChunkTextDelta, ChunkFinish},
			finish:   FinishError,
			code:     CodeRateLimit,
		},
		{
			name:     "wrapped failure is recovered",
			provider: &stubProvider{err: errors.Join(errors.New("ctx"), Errorf(CodeServer, "boom"))},
			types:    []ChunkType{ChunkFinish},
			finish:   FinishError,
			code:     CodeServer,
		},
		{
			name:     "plain error is UNKNOWN",
			provider: &stubProvider{err: errors.New("boom")},
			types:    []ChunkType{ChunkFinish},
			finish:   FinishError,
			code:     CodeUnknown,
		},
		{
			name:     "cancelled ctx is aborted",
			provider: &stubProvider{chunks: []Chunk{text}, block: true},
			cancel:   true,
			types:    []ChunkType{ChunkTextDelta, ChunkFinish},
			finish:   FinishAborted,
			code:     CodeAborted,
		},
		{
			name:     "ABORTED failure is aborted",
			provider: &stubProvider{err: Errorf(CodeAborted, "gone")},
			types:    []ChunkType{ChunkFinish},
			finish:   FinishAborted,
			code:     CodeAborted,
		},
		{
			name:     "nil return without finish is a stop",
			provider: &stubProvider{chunks: []Chunk{text}},
			types:    []ChunkType{ChunkTextDelta, ChunkFinish},
			finish:   FinishStop,
		},
		{
			name:   "nil provider",
			types:  []ChunkType{ChunkFinish},
			finish: FinishError,
			code:   CodeNoProvider,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var got []Chunk
			emit := func(c Chunk) error {
				got = append(got, c)
				if tt.cancel && c.Type == ChunkTextDelta {
					cancel()
				}
				return nil
			}
			if err := Run(ctx, tt.provider, Request{}, emit); err != nil {
				t.Fatalf("Run = %v", err)
			}
			var types []ChunkType
			for _, c := range got {
				types = append(types, c.Type)
			}
			if len(types) != len(tt.types) {
				t.Fatalf("chunks = %v, want %v", types, tt.types)
			}
			for i := range types {
				if types[i] != tt.types[i] {
					t.Fatalf("chunks = %v, want %v", types, tt.types)
				}
			}
			last := got[len(got)-1].Reason
			if last.Kind != tt.finish {
				t.Fatalf("finish = %s, want %s", last.Kind, tt.finish)
			}
			if tt.code == "" {
				if last.Failure != nil {
					t.Fatalf("unexpected failure %+v", last.Failure)
				}
			} else if last.Failure == nil || last.Failure.Code != tt.code {
				t.Fatalf("failure = %+v, want code %s", last.Failure, tt.code)
			}
		})
	}
}

func TestRunReturnsConsumerError(t *testing.T) {
	t.Parallel()
	stop := errors.New("consumer stopped")
	p := &stubProvider{chunks: []Chunk{textDelta(0, "a"), textDelta(0, "b"), Finish(FinishStop, nil)}}
	var n int
	err := Run(context.Background(), p, Request{}, func(c Chunk) error {
		n++
		return stop
	})
	if !errors.Is(err, stop) || n != 1 {
		t.Fatalf("Run = %v after %d chunks", err, n)
	}
	// A consumer that fails on the synthetic finish also gets its error back.
	failing := &stubProvider{err: Errorf(CodeServer, "x")}
	err = Run(context.Background(), failing, Request{}, func(c Chunk) error { return stop })
	if !errors.Is(err, stop) {
		t.Fatalf("Run on synthetic finish = %v", err)
	}
}
