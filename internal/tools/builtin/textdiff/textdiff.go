// Package textdiff computes line-based unified diffs with an LCS over the
// changed middle of two texts. Work and output are bounded: a middle too
// large for the LCS table is shown as a whole replacement, and long output is
// cut with a marker.
package textdiff

import (
	"fmt"
	"strings"
)

const (
	// contextLines is the unified diff context size.
	contextLines = 3
	// maxCells bounds the LCS table (n*m of the changed middle).
	maxCells = 2_000_000
	// MaxOutput bounds the diff text in bytes.
	MaxOutput = 256 * 1024
)

// TruncatedMarker ends a diff cut at MaxOutput.
const TruncatedMarker = "\\ diff truncated"

// Diff is the result of Compute.
type Diff struct {
	Unified   string `json:"unified"`
	Added     int    `json:"added"`
	Removed   int    `json:"removed"`
	Truncated bool   `json:"truncated,omitempty"`
}

type opKind byte

const (
	opEqual  opKind = ' '
	opDelete opKind = '-'
	opInsert opKind = '+'
)

type op struct {
	kind opKind
	line string // with its trailing newline, if any
}

// Compute diffs a → b. oldName is "/dev/null" for a created file. Equal
// texts give an empty Unified.
func Compute(oldName, newName, a, b string) Diff {
	if a == b {
		return Diff{}
	}
	ops := diffLines(splitLines(a), splitLines(b))
	var d Diff
	for _, o := range ops {
		switch o.kind {
		case opInsert:
			d.Added++
		case opDelete:
			d.Removed++
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "--- %s\n+++ %s\n", oldName, newName)
	writeHunks(&sb, ops)
	d.Unified = sb.String()
	if len(d.Unified) > MaxOutput {
		cut := strings.LastIndexByte(d.Unified[:MaxOutput], '\n') + 1
		d.Unified = d.Unified[:cut] + TruncatedMarker + "\n"
		d.Truncated = true
	}
	return d
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// diffLines trims the common prefix and suffix, then runs an LCS on the
// middle (or replaces it wholesale when it is too large).
func diffLines(a, b []string) []op {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ops := make([]op, 0, len(a)+len(b))
	for _, l := range a[:pre] {
		ops = append(ops, op{opEqual, l})
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	if len(ma)*len(mb) <= maxCells {
		ops = append(ops, lcsOps(ma, mb)...)
	} else {
		for _, l := range ma {
			ops = append(ops, op{opDelete, l})
		}
		for _, l := range mb {
			ops = append(ops, op{opInsert, l})
		}
	}
	for _, l := range a[len(a)-suf:] {
		ops = append(ops, op{opEqual, l})
	}
	return ops
}

// lcsOps builds the edit script from a suffix LCS table, preferring
// deletions before insertions within a change.
func lcsOps(a, b []string) []op {
	n, m := len(a), len(b)
	w := m + 1
	t := make([]int32, (n+1)*w)
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				t[i*w+j] = t[(i+1)*w+j+1] + 1
			} else {
				t[i*w+j] = max(t[(i+1)*w+j], t[i*w+j+1])
			}
		}
	}
	ops := make([]op, 0, n+m)
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case a[i] == b[j]:
			ops = append(ops, op{opEqual, a[i]})
			i++
			j++
		case t[(i+1)*w+j] >= t[i*w+j+1]:
			ops = append(ops, op{opDelete, a[i]})
			i++
		default:
			ops = append(ops, op{opInsert, b[j]})
			j++
		}
	}
	for ; i < n; i++ {
		ops = append(ops, op{opDelete, a[i]})
	}
	for ; j < m; j++ {
		ops = append(ops, op{opInsert, b[j]})
	}
	return ops
}

// writeHunks groups changes with contextLines of context; changes closer
// than twice the context share a hunk.
func writeHunks(sb *strings.Builder, ops []op) {
	// aPos[k], bPos[k]: lines of a and b consumed before ops[k].
	aPos := make([]int, len(ops)+1)
	bPos := make([]int, len(ops)+1)
	for k, o := range ops {
		aPos[k+1], bPos[k+1] = aPos[k], bPos[k]
		if o.kind != opInsert {
			aPos[k+1]++
		}
		if o.kind != opDelete {
			bPos[k+1]++
		}
	}
	k := 0
	for k < len(ops) {
		for k < len(ops) && ops[k].kind == opEqual {
			k++
		}
		if k == len(ops) {
			return
		}
		start := max(0, k-contextLines)
		end := k // exclusive end of the last change seen
		for end < len(ops) {
			if ops[end].kind != opEqual {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == opEqual {
				run++
			}
			if run == len(ops) || run-end > 2*contextLines {
				break
			}
			end = run
		}
		stop := min(len(ops), end+contextLines)
		fmt.Fprintf(sb, "@@ -%s +%s @@\n",
			hunkRange(aPos[start], aPos[stop]-aPos[start]),
			hunkRange(bPos[start], bPos[stop]-bPos[start]))
		for _, o := range ops[start:stop] {
			sb.WriteByte(byte(o.kind))
			sb.WriteString(o.line)
			if !strings.HasSuffix(o.line, "\n") {
				sb.WriteString("\n\\ No newline at end of file\n")
			}
		}
		k = stop
	}
}

// hunkRange formats a range the GNU way: an empty range names the line
// before it.
func hunkRange(before, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", before)
	case 1:
		return fmt.Sprintf("%d", before+1)
	default:
		return fmt.Sprintf("%d,%d", before+1, n)
	}
}
