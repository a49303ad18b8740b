package render

import (
	"math"
	"strconv"
	"strings"
)

// ContextFigures fill the header's context meter: the next request's size
// and the route's context window (0 when unknown).
type ContextFigures struct {
	Tokens int64
	Window int64
}

// PressurePercent is where the meter turns to a warning: automatic
// compaction starts at this share of the window (compact's default
// threshold).
const PressurePercent = 80

// Percent is Tokens as a share of Window (0 when the window is unknown).
func (c ContextFigures) Percent() float64 {
	if c.Window <= 0 || c.Tokens <= 0 {
		return 0
	}
	return float64(c.Tokens) * 100 / float64(c.Window)
}

// percentText is the whole percent shown, rounded down (so a full window
// is not shown before it is full).
func (c ContextFigures) percentText() string {
	return strconv.FormatFloat(math.Floor(c.Percent()), 'f', 0, 64) + "%"
}

// percentAttr is the percent to one decimal, for the script's ring.
func (c ContextFigures) percentAttr() string {
	return strconv.FormatFloat(math.Round(c.Percent()*10)/10, 'f', -1, 64)
}

// level is the meter's state for styling: ok, high (at or past the
// compaction threshold), over (beyond the window).
func (c ContextFigures) level() string {
	switch p := c.Percent(); {
	case p > 100:
		return "over"
	case p >= PressurePercent:
		return "high"
	}
	return "ok"
}

// title is the meter's tooltip.
func (c ContextFigures) title() string {
	if c.Window <= 0 {
		return "Context: " + groupDigits(c.Tokens) + " tokens in the next request (context window unknown)"
	}
	return "Context: " + groupDigits(c.Tokens) + " of " + groupDigits(c.Window) + " tokens (" + c.percentAttr() +
		"%) in the next request; history is compacted at " + strconv.Itoa(PressurePercent) + "%"
}

// shortTokens is tokens without a trailing ".0" (128k, 12.3k, 950).
func shortTokens(n int64) string {
	s := tokens(n)
	s = strings.Replace(s, ".0k", "k", 1)
	return strings.Replace(s, ".00M", "M", 1)
}

// groupDigits writes n with thousands separators (12,345).
func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
