package models

import (
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// Group bodies are compressed with zstd when that saves enough: a group is
// repetitive JSON (each chunk repeats its turn, step and field names, a
// block's end repeats its deltas), about half its size compressed. The
// coder is made on first use, so a server that writes nothing holds none
// of its memory.

// metaZstd marks a group whose body is compressed.
const metaZstd = "z"

// minCompress is the smallest body worth compressing (a frame has a header
// of a few bytes).
const minCompress = 96

// maxGroupDecoded bounds what a stored group may decompress to, far above
// what the encoder writes (maxGroupBytes plus one event's entry).
const maxGroupDecoded = 4 << 20

var groupCoder = sync.OnceValues(func() (*zstd.Encoder, *zstd.Decoder) {
	enc, err := zstd.NewWriter(nil,
		zstd.WithEncoderLevel(zstd.SpeedDefault),
		zstd.WithEncoderConcurrency(1),
		zstd.WithEncoderCRC(false),
		zstd.WithWindowSize(1<<16),
		zstd.WithLowerEncoderMem(true))
	if err != nil {
		panic(fmt.Sprintf("zstd encoder: %v", err)) // constant options
	}
	dec, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(0),
		zstd.WithDecoderMaxMemory(maxGroupDecoded),
		zstd.WithDecoderLowmem(true))
	if err != nil {
		panic(fmt.Sprintf("zstd decoder: %v", err)) // constant options
	}
	return enc, dec
})

// compressGroup returns the stored form of a group body and its meta.
func compressGroup(body []byte) ([]byte, string) {
	if len(body) < minCompress {
		return body, metaGroup
	}
	enc, _ := groupCoder()
	c := enc.EncodeAll(body, make([]byte, 0, len(body)/2))
	if len(c) > len(body)*7/8 {
		return body, metaGroup
	}
	return c, metaZstd
}

// decompressGroup is the body of a compressed group.
func decompressGroup(seq int64, body []byte) ([]byte, error) {
	_, dec := groupCoder()
	out, err := dec.DecodeAll(body, nil)
	if err != nil {
		return nil, fmt.Errorf("group row at seq %d: %w", seq, err)
	}
	return out, nil
}
