package compact

// Range is a span of current surface nodes chosen for compaction, by
// position: Start and End are its first and last seqs (after earlier
// replacements Start may be numerically greater than End; Seqs is
// authoritative).
type Range struct {
	Start    int64   `json:"start"`
	End      int64   `json:"end"`
	StartIdx int     `json:"startIdx"`
	EndIdx   int     `json:"endIdx"`
	Seqs     []int64 `json:"seqs"`
	Tokens   int64   `json:"tokens"` // heuristic price of the span
}

// balancedCuts reports, for each of the len(nodes)+1 cuts of the surface
// (cut i lies before node i), whether no tool call is left unanswered across
// it. A stray result never makes the count negative.
func balancedCuts(nodes []NodePrice) []bool {
	cuts := make([]bool, len(nodes)+1)
	cuts[0] = true
	open := 0
	for i, n := range nodes {
		open = max(0, open+n.pairing)
		cuts[i+1] = open == 0
	}
	return cuts
}

// SelectRange picks the head of the surface to compact (upstream §6.4): walk
// from the tail accumulating node prices until at least retain tokens are
// kept, then move the cut head-ward until it does not separate a tool call
// from its result. The range is everything before the cut; false when
// nothing would remain to compact (the retained tail is the whole surface).
// retain 0 keeps only the newest balanced unit.
func SelectRange(m Measurement, retain int64) (Range, bool) {
	nodes := m.Nodes
	if len(nodes) == 0 {
		return Range{}, false
	}
	keep := len(nodes)
	var kept int64
	for i := len(nodes) - 1; i >= 0; i-- {
		kept += nodes[i].Tokens
		keep = i
		if kept >= retain {
			break
		}
	}
	cuts := balancedCuts(nodes)
	for keep > 0 && !cuts[keep] {
		keep--
	}
	if keep == 0 {
		return Range{}, false
	}
	return spanOf(nodes, 0, keep-1), true
}

// spanOf builds the range of nodes[i..j].
func spanOf(nodes []NodePrice, i, j int) Range {
	r := Range{Start: nodes[i].Seq, End: nodes[j].Seq, StartIdx: i, EndIdx: j, Seqs: make([]int64, 0, j-i+1)}
	for _, n := range nodes[i : j+1] {
		r.Seqs = append(r.Seqs, n.Seq)
		r.Tokens += n.Tokens
	}
	return r
}
