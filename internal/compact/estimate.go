package compact

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"harness/internal/llm"
	"harness/internal/session"
)

// The fixed heuristic of upstream §6.1: about four characters per token, plus
// structural overheads. Lengths are UTF-16 code units, as upstream counts
// them, so both implementations price a log identically.
const (
	charsPerToken = 4
	blockOverhead = 4 // JSON framing and type tag of one content block
	roleOverhead  = 4 // role framing of one message
	// imageTokens prices an image block. Blocks carry no dimensions here, so
	// every image is priced like a 1024x1024 picture (85 base + 4 tiles of
	// 170) rather than at its tiny JSON reference.
	imageTokens = 85 + 4*170
)

// ceilTokens is ceil(n / charsPerToken).
func ceilTokens(n int) int64 { return int64((n + charsPerToken - 1) / charsPerToken) }

// utf16Len is the length of s in UTF-16 code units.
func utf16Len(s string) int {
	n := len(s)
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			n = 0
			for _, r := range s {
				if r >= 0x10000 {
					n += 2
				} else {
					n++
				}
			}
			return n
		}
	}
	return n
}

// EstimateBlocks prices content blocks: text and reasoning ceil(len/4)+4,
// tool calls ceil(name/4)+ceil(args/4)+4, tool results their content+4,
// other blocks 4+ceil(json/4).
func EstimateBlocks(blocks []llm.ContentBlock) int64 {
	var n int64
	for _, b := range blocks {
		switch b.Type {
		case llm.BlockText, llm.BlockReasoning:
			n += ceilTokens(utf16Len(b.Text)) + blockOverhead
		case llm.BlockToolCall:
			n += ceilTokens(utf16Len(b.Name)) + ceilTokens(utf16Len(b.Arguments)) + blockOverhead
		case llm.BlockToolResult:
			n += EstimateBlocks(b.Content) + blockOverhead
		case llm.BlockImage:
			n += imageTokens + blockOverhead
		default:
			n += blockOverhead + ceilTokens(utf16Len(jsonText(b)))
		}
	}
	return n
}

// EstimateMessage prices one model-visible message: its content plus the
// per-message role overhead.
func EstimateMessage(m llm.Message) int64 { return EstimateBlocks(m.Content) + roleOverhead }

// EstimateHeader prices the non-message part of a request: the system prompt
// (ceil(len/4)+4 when present) and the tool schemas (ceil(json/4)+4 when
// any).
func EstimateHeader(h session.EpochHeader) int64 {
	var n int64
	if h.System != "" {
		n += ceilTokens(utf16Len(h.System)) + roleOverhead
	}
	if len(h.Tools) > 0 {
		n += ceilTokens(utf16Len(jsonText(h.Tools))) + blockOverhead
	}
	return n
}

// jsonText is v as JSON without HTML escaping (JSON.stringify's output);
// empty when v does not marshal, which only prices it lower.
func jsonText(v any) string {
	b, _ := marshalJSON(v)
	return string(b)
}

// marshalJSON encodes v without HTML escaping.
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
