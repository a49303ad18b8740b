package models

import (
	"fmt"

	"github.com/klauspost/compress/s2"
)

// Group bodies are compressed with S2 (klauspost/compress's faster
// Snappy) when that saves enough: a group is repetitive JSON (each chunk
// repeats its turn, step and field names, a block's end repeats its
// deltas), 70% of its size compressed on the 16-chunk workload. zstd
// (same module) was measured too: 61%, but it decodes fifteen times
// slower, and every replay, REST page and cold load decodes every group it
// reads: a 5,000-event page took 7.5 ms with zstd against 5.4 with S2.

// metaS2 marks a group whose body is compressed.
const metaS2 = "s"

// minCompress is the smallest body worth compressing, and minSaving the
// fewest bytes worth a decompression on every read.
const (
	minCompress = 64
	minSaving   = 8
)

// maxGroupDecoded bounds what a stored group may decompress to, far above
// what the encoder writes (maxGroupBytes plus one event's entry).
const maxGroupDecoded = 4 << 20

// rowArena holds the compressed bodies of one batch's rows: a streaming
// session's open group is compressed again on every commit, and
// s2.Encode(nil, ...) allocated its worst case (more than the group) each
// time. The writer resets it once a batch is done with (nothing keeps a
// row past its commit); a nil arena allocates.
type rowArena struct{ buf []byte }

func (a *rowArena) reset() {
	if a != nil {
		a.buf = a.buf[:0]
	}
}

// encode is body compressed, in the arena.
func (a *rowArena) encode(body []byte) []byte {
	if a == nil {
		return s2.Encode(nil, body)
	}
	need := s2.MaxEncodedLen(len(body))
	if need < 0 {
		return s2.Encode(nil, body)
	}
	if cap(a.buf)-len(a.buf) < need {
		// The rows written so far keep the old array.
		a.buf = make([]byte, 0, max(2*cap(a.buf), need, 64<<10))
	}
	start := len(a.buf)
	c := s2.Encode(a.buf[start:start+need], body)
	a.buf = a.buf[:start+len(c)]
	return c[:len(c):len(c)]
}

// compressGroup returns the stored form of a group body and its meta.
func compressGroup(body []byte, arena *rowArena) ([]byte, string) {
	if len(body) < minCompress {
		return body, metaGroup
	}
	c := arena.encode(body)
	if len(c)+minSaving > len(body) {
		return body, metaGroup
	}
	return c, metaS2
}

// decompressGroup is the body of a compressed group, decoded into buf when
// it fits.
func decompressGroup(seq int64, body, buf []byte) ([]byte, error) {
	n, err := s2.DecodedLen(body)
	if err == nil && n > maxGroupDecoded {
		err = fmt.Errorf("decodes to %d bytes", n)
	}
	if err != nil {
		return nil, fmt.Errorf("group row at seq %d: %w", seq, err)
	}
	out, err := s2.Decode(buf[:cap(buf)], body)
	if err != nil {
		return nil, fmt.Errorf("group row at seq %d: %w", seq, err)
	}
	return out, nil
}
