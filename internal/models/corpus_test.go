package models

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"harness/internal/session"
)

// loadCorpus reads a recorded DeepSeek Harness log (testdata/dsh): it skips
// the header line and unpacks packed chunk rows into assistant/chunk events.
func loadCorpus(t *testing.T, path string) []session.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var evs []session.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var row struct {
			Type  string `json:"type"`
			Seq0  int64  `json:"seq0"`
			Time0 int64  `json:"time0"`
			Data  struct {
				Turn  int      `json:"turn"`
				Step  int      `json:"step"`
				Index int      `json:"index"`
				DT    []int64  `json:"dt"`
				Texts []string `json:"texts"`
				Args  []string `json:"args"`
				ID    string   `json:"id"`
				Name  string   `json:"name"`
			} `json:"data"`
		}
		if err := json.Unmarshal(line, &struct {
			Type *string `json:"type"`
		}{&row.Type}); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if strings.HasSuffix(row.Type, "-chunks") {
			if err := json.Unmarshal(line, &row); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
		}
		var chunkType string
		var parts []string
		switch row.Type {
		case "session":
			continue
		case "reasoning-chunks":
			chunkType, parts = "reasoning-delta", row.Data.Texts
		case "text-chunks":
			chunkType, parts = "text-delta", row.Data.Texts
		case "tool-call-chunks":
			chunkType, parts = "tool-call-delta", row.Data.Args
		default:
			var e session.Event
			if err := json.Unmarshal(line, &e); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			evs = append(evs, e)
			continue
		}
		at := row.Time0
		for k, text := range parts {
			if k < len(row.Data.DT) {
				at += row.Data.DT[k]
			}
			chunk := map[string]any{"type": chunkType, "index": row.Data.Index}
			if chunkType == "tool-call-delta" {
				chunk["argumentsDelta"] = text
				if k == 0 {
					chunk["id"], chunk["name"] = row.Data.ID, row.Data.Name
				}
			} else {
				chunk["text"] = text
			}
			e := ev(row.Seq0+int64(k), session.TypeAssistantChunk, map[string]any{"turn": row.Data.Turn, "step": row.Data.Step, "chunk": chunk})
			e.Time = at
			evs = append(evs, e)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for i, e := range evs {
		if e.Seq != int64(i) {
			t.Fatalf("%s: event %d has seq %d", path, i, e.Seq)
		}
	}
	return evs
}

func corpusFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "dsh", "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus files: %v", err)
	}
	return files
}

// storeCorpus writes a corpus log into a new session and returns its id.
func storeCorpus(t *testing.T, s *Store, evs []session.Event) string {
	t.Helper()
	id := mustCreate(t, s, &Session{OwnerID: "o"}).ID
	for _, e := range evs {
		s.W.Enqueue(id, e)
	}
	if err := s.W.Flush(ctxTimeout(t, 20*time.Second), id); err != nil {
		t.Fatal(err)
	}
	return id
}

func TestCorpusRoundTrip(t *testing.T) {
	t.Parallel()
	forEachDB(t, func(t *testing.T, db *DB) {
		s := newTestStore(t, db, WriterOptions{})
		for _, file := range corpusFiles(t) {
			evs := loadCorpus(t, file)
			id := storeCorpus(t, s, evs)
			raw, err := s.EventsRaw(t.Context(), id, -1, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(raw) != len(evs) {
				t.Fatalf("%s: %d stored, want %d", file, len(raw), len(evs))
			}
			turns, messages := int64(0), int64(0)
			for i, e := range evs {
				if string(raw[i].Body) != string(mustMarshal(t, e)) {
					t.Fatalf("%s: event %d stored as %s", file, i, raw[i].Body)
				}
				switch e.Type {
				case session.TypeTurnStart:
					turns++
				case session.TypeUserMessage, session.TypeAssistantMessage:
					messages++
				}
			}
			// A page from the middle decodes to the same events.
			mid := int64(len(evs) / 2)
			got, err := s.EventsSince(t.Context(), id, mid, 5)
			if err != nil || len(got) != min(5, len(evs)-int(mid)-1) {
				t.Fatalf("%s: events since %d = %d (%v)", file, mid, len(got), err)
			}
			for i, g := range got {
				if string(mustMarshal(t, g)) != string(raw[int(mid)+1+i].Body) {
					t.Fatalf("%s: decoded event %d differs", file, g.Seq)
				}
			}
			sum, err := s.Summary(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			if sum.Turns != turns || sum.Messages != messages || sum.Events != int64(len(evs)) ||
				sum.LastActivity != evs[len(evs)-1].Time {
				t.Errorf("%s: summary %+v, want %d turns, %d messages", file, sum, turns, messages)
			}
		}
	})
}

// TestTailPageCorpus pages back through real logs and checks the cut rules:
// the pages tile the log exactly, each starts at an opener, and each but the
// oldest holds maxMessages messages (one more when an assistant message's
// user message opens the page).
func TestTailPageCorpus(t *testing.T) {
	t.Parallel()
	forEachDB(t, func(t *testing.T, db *DB) {
		s := newTestStore(t, db, WriterOptions{})
		for _, file := range corpusFiles(t) {
			evs := loadCorpus(t, file)
			id := storeCorpus(t, s, evs)
			for _, maxMessages := range []int{1, 2, 3, 5, 1000} {
				name := fmt.Sprintf("%s max %d", filepath.Base(file), maxMessages)
				before := int64(-1)
				next := int64(len(evs)) // the seq the next older page must end before
				for pages := 0; ; pages++ {
					page, hasMore, err := s.TailPage(t.Context(), id, before, maxMessages)
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					if len(page) == 0 || page[len(page)-1].Seq != next-1 {
						t.Fatalf("%s: page %d does not end at %d", name, pages, next-1)
					}
					first := page[0]
					msgs := 0
					for i, e := range page {
						if e.Seq != first.Seq+int64(i) {
							t.Fatalf("%s: page %d not contiguous", name, pages)
						}
						if e.Type == session.TypeUserMessage || e.Type == session.TypeAssistantMessage {
							msgs++
						}
					}
					if hasMore {
						switch first.Type {
						case session.TypeTurnStart, session.TypeStepStart, session.TypeUserMessage:
						default:
							if prev := evs[first.Seq-1]; prev.Type != session.TypeAssistantMessage {
								t.Errorf("%s: page %d starts at %s #%d", name, pages, first.Type, first.Seq)
							}
						}
						if msgs < maxMessages || msgs > maxMessages+1 {
							t.Errorf("%s: page %d has %d messages", name, pages, msgs)
						}
					} else {
						if first.Seq != 0 || msgs > maxMessages+1 {
							t.Errorf("%s: last page starts at %d with %d messages", name, first.Seq, msgs)
						}
						break
					}
					before, next = first.Seq, first.Seq
					if pages > len(evs) {
						t.Fatalf("%s: paging does not end", name)
					}
				}
			}
		}
	})
}
