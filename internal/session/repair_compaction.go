package session

// CompactionInterrupted is the error of the compaction/end crash repair
// appends for a compaction whose summary never landed: the transcript shows
// it as a failed compaction, and the history is what it was.
const CompactionInterrupted = "interrupted: the server stopped before the summary was written; the history is unchanged"

// compactionClosers returns a compaction/end for every compaction/start
// that has none, in the order the starts were logged: the bracket of a
// dead process would otherwise hold the compaction lock (an unmatched start
// after the last end-seed) and leave the transcript saying it still runs.
// The end copies the start's turn. A bracket whose compaction/summary
// landed (the checkpoint replaced the span; only the end was lost) is
// closed as a success; any other carries CompactionInterrupted, the shape
// of every failed compaction's end.
func compactionClosers(events []Event) []Draft {
	type bracket struct {
		turn       *int
		summarized bool
	}
	open := map[string]*bracket{}
	var order []string
	for _, ev := range events {
		switch ev.Type {
		case TypeCompactionStart:
			if v, err := Decode[CompactionStart](ev); err == nil {
				if _, dup := open[v.CompactionID]; !dup {
					order = append(order, v.CompactionID)
				}
				open[v.CompactionID] = &bracket{turn: v.Turn}
			}
		case TypeCompactionSum:
			if v, err := Decode[CompactionSummary](ev); err == nil && open[v.CompactionID] != nil {
				open[v.CompactionID].summarized = true
			}
		case TypeCompactionEnd:
			if v, err := Decode[CompactionEnd](ev); err == nil {
				delete(open, v.CompactionID)
			}
		}
	}
	var drafts []Draft
	for _, id := range order {
		b, ok := open[id]
		if !ok {
			continue
		}
		delete(open, id) // a repeated id gets one end
		end := CompactionEnd{CompactionID: id, Turn: b.turn}
		if !b.summarized {
			end.Error = CompactionInterrupted
		}
		drafts = append(drafts, Draft{Type: TypeCompactionEnd, Data: end})
	}
	return drafts
}
