package tools

import (
	"context"
	"sync"
	"time"
	"unicode/utf8"
)

// Live-output defaults: upstream throttles tool progress to one append per
// 100 ms; the byte cap keeps a runaway command from flooding the log (the
// model-visible result has its own, smaller cap).
const (
	DefaultOutputInterval = 100 * time.Millisecond
	DefaultMaxLiveOutput  = 1 << 20
)

const liveTruncatedNote = "\n[... live output truncated ...]\n"

type outputSegment struct {
	stream string
	text   string
}

// liveOutput batches a call's progress text. Emission order equals write
// order: takes and emits happen under flushMu.
type liveOutput struct {
	// ctx is the call's: progress flushes stop when it is done, and the
	// final flush (close) outlives it.
	ctx      context.Context
	emit     func(ctx context.Context, stream, text string)
	interval time.Duration
	max      int

	flushMu sync.Mutex

	mu      sync.Mutex
	segs    []outputSegment
	last    time.Time // last flush; zero before the first
	pending bool      // a timer flush is scheduled
	closed  bool
	sent    int
	capped  bool
}

func newLiveOutput(ctx context.Context, interval time.Duration, max int, emit func(ctx context.Context, stream, text string)) *liveOutput {
	if interval <= 0 {
		interval = DefaultOutputInterval
	}
	if max <= 0 {
		max = DefaultMaxLiveOutput
	}
	return &liveOutput{ctx: ctx, emit: emit, interval: interval, max: max}
}

func (l *liveOutput) write(stream, text string) {
	l.mu.Lock()
	if l.closed || l.capped || text == "" {
		l.mu.Unlock()
		return
	}
	if room := l.max - l.sent; len(text) > room {
		text = CutRunes(text, room) + liveTruncatedNote
		l.capped = true
	}
	l.sent += len(text)
	if n := len(l.segs); n > 0 && l.segs[n-1].stream == stream {
		l.segs[n-1].text += text
	} else {
		l.segs = append(l.segs, outputSegment{stream, text})
	}
	now := time.Now()
	due := !l.pending && (l.last.IsZero() || now.Sub(l.last) >= l.interval)
	if due {
		l.last = now
	} else if !l.pending {
		l.pending = true
		time.AfterFunc(l.last.Add(l.interval).Sub(now), l.timerFlush)
	}
	l.mu.Unlock()
	if due {
		l.flush(l.ctx)
	}
}

func (l *liveOutput) timerFlush() {
	l.mu.Lock()
	l.pending = false
	if len(l.segs) == 0 {
		l.mu.Unlock()
		return
	}
	now := time.Now()
	if wait := l.last.Add(l.interval).Sub(now); wait > 0 {
		l.pending = true
		time.AfterFunc(wait, l.timerFlush)
		l.mu.Unlock()
		return
	}
	l.last = now
	l.mu.Unlock()
	l.flush(l.ctx)
}

// flush emits what is buffered with ctx. Once ctx is done it leaves the
// text to close: emitting it with a done ctx could lose it.
func (l *liveOutput) flush(ctx context.Context) {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	if ctx.Err() != nil {
		return
	}
	l.mu.Lock()
	segs := l.segs
	l.segs = nil
	l.mu.Unlock()
	for _, s := range segs {
		l.emit(ctx, s.stream, s.text)
	}
}

// close stops accepting output and emits what is buffered. A timer that fires
// later finds nothing to send.
func (l *liveOutput) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	// Without the cancel: what a cancelled body printed before it stopped
	// is part of the record, as the turn's final log writes are.
	l.flush(context.WithoutCancel(l.ctx))
}

// CutRunes returns the longest prefix of s of at most n bytes that does not
// split a UTF-8 sequence (tools truncating text for the model use it too).
func CutRunes(s string, n int) string {
	if n >= len(s) {
		return s
	}
	if n <= 0 {
		return ""
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
