package openai

import (
	"bufio"
	"bytes"
	"io"
	"time"
)

// watchdog cancels a call when one outstanding read (or the wait for the
// response headers) sees no bytes for idle. It is armed only while a read is
// outstanding, so a slow consumer never trips it.
type watchdog struct {
	idle  time.Duration
	fire  func()
	timer *time.Timer
}

func newWatchdog(idle time.Duration, fire func()) *watchdog {
	return &watchdog{idle: idle, fire: fire}
}

func (w *watchdog) arm() {
	if w.timer == nil {
		w.timer = time.AfterFunc(w.idle, w.fire)
		return
	}
	w.timer.Reset(w.idle)
}

func (w *watchdog) disarm() {
	if w.timer != nil {
		w.timer.Stop()
	}
}

// watchedReader arms the watchdog around every read of the raw body.
type watchedReader struct {
	r   io.Reader
	dog *watchdog
}

func (w watchedReader) Read(p []byte) (int, error) {
	w.dog.arm()
	n, err := w.r.Read(p)
	w.dog.disarm()
	return n, err
}

// sseBody is the response body go-openai reads. It passes SSE lines
// through, except comments (": keep-alive"), which only count as activity,
// and the other non-data fields; it remembers whether the `data: [DONE]` terminator went by, which
// go-openai's reader does not expose.
type sseBody struct {
	src     io.ReadCloser
	r       *bufio.Reader
	pending []byte
	err     error
	// midLine is set while the rest of an over-long line is being read;
	// dropping says that line is a comment.
	midLine  bool
	dropping bool
	sawDone  bool
	n        int64 // raw bytes received
}

func newSSEBody(src io.ReadCloser, dog *watchdog) *sseBody {
	return &sseBody{src: src, r: bufio.NewReaderSize(watchedReader{r: src, dog: dog}, 64<<10)}
}

// Read implements io.Reader.
func (b *sseBody) Read(p []byte) (int, error) {
	for len(b.pending) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		line, err := b.r.ReadSlice('\n')
		b.n += int64(len(line))
		b.pending = b.filter(line)
		b.midLine = err == bufio.ErrBufferFull
		if err != nil && err != bufio.ErrBufferFull {
			b.err = err
		}
	}
	n := copy(p, b.pending)
	b.pending = b.pending[n:]
	return n, nil
}

// filter returns what of line go-openai should see.
func (b *sseBody) filter(line []byte) []byte {
	if b.midLine {
		if b.dropping {
			return nil
		}
		return line
	}
	b.dropping = isIgnoredField(line)
	if b.dropping {
		return nil
	}
	if isDone(line) {
		b.sawDone = true
	}
	return line
}

// Close implements io.Closer.
func (b *sseBody) Close() error { return b.src.Close() }

// isIgnoredField reports SSE lines go-openai must not see: comments and the
// event, id and retry fields. Its reader would keep them as a possible error
// body and fail to parse a later in-stream error.
func isIgnoredField(line []byte) bool {
	if len(line) > 0 && line[0] == ':' {
		return true
	}
	for _, f := range []string{"event:", "id:", "retry:"} {
		if bytes.HasPrefix(line, []byte(f)) {
			return true
		}
	}
	return false
}

// isDone reports the `data: [DONE]` terminator line.
func isDone(line []byte) bool {
	rest, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("data:"))
	return ok && string(bytes.TrimSpace(rest)) == "[DONE]"
}
