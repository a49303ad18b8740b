package builtin

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// capture keeps the head and the tail of a stream within limit bytes and
// counts everything that went through.
type capture struct {
	headCap, tailCap int
	head, tail       []byte
	total            int64
}

func newCapture(limit int) *capture {
	h := limit / 2
	return &capture{headCap: h, tailCap: limit - h}
}

func (c *capture) Write(p []byte) (int, error) {
	c.total += int64(len(p))
	rest := p
	if room := c.headCap - len(c.head); room > 0 {
		n := min(room, len(rest))
		c.head = append(c.head, rest[:n]...)
		rest = rest[n:]
	}
	if len(rest) > 0 {
		c.tail = append(c.tail, rest...)
		if len(c.tail) > 2*c.tailCap {
			c.tail = append(c.tail[:0:0], c.tail[len(c.tail)-c.tailCap:]...)
		}
	}
	return len(p), nil
}

// render returns at most budget bytes of the stream (plus a marker when
// bytes were dropped): the head, the marker, the tail.
func (c *capture) render(budget int) (text string, truncated bool) {
	tail := c.tail
	if len(tail) > c.tailCap {
		tail = tail[len(tail)-c.tailCap:]
	}
	if c.total <= int64(budget) && int64(len(c.head)+len(tail)) == c.total {
		return string(c.head) + string(tail), false
	}
	hb := budget / 2
	tb := budget - hb
	h := c.head[:min(hb, len(c.head))]
	t := tail[len(tail)-min(tb, len(tail)):]
	// Do not split UTF-8 sequences at the cut points.
	h = h[:completeUTF8(h)]
	for len(t) > 0 && !utf8.RuneStart(t[0]) {
		t = t[1:]
	}
	omitted := c.total - int64(len(h)) - int64(len(t))
	var sb strings.Builder
	sb.Write(h)
	if len(h) > 0 && h[len(h)-1] != '\n' {
		sb.WriteByte('\n')
	}
	fmt.Fprintf(&sb, "[... output truncated: %d bytes omitted ...]\n", omitted)
	sb.Write(t)
	return sb.String(), true
}

// splitBudget shares one byte budget between stdout and stderr: each gets
// what it needs when both fit, stderr keeps at least half when both are
// large, and a small stream leaves the rest to the other.
func splitBudget(total int, outLen, errLen int64) (outBudget, errBudget int) {
	if outLen+errLen <= int64(total) {
		return int(outLen), int(errLen)
	}
	e := min(errLen, int64(max(total/2, total-int(min(outLen, int64(total))))))
	o := min(outLen, int64(total)-e)
	return int(o), int(e)
}

// completeUTF8 returns how much of p can be decoded without splitting a
// trailing, incomplete UTF-8 sequence.
func completeUTF8(p []byte) int {
	for i := len(p) - 1; i >= 0 && i >= len(p)-utf8.UTFMax; i-- {
		if utf8.RuneStart(p[i]) {
			if utf8.FullRune(p[i:]) {
				return len(p)
			}
			return i
		}
	}
	return len(p)
}
