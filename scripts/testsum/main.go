// Command testsum reads `go test -json` on stdin and prints what a person
// running the suite wants to see: each package as it finishes, a line every
// 30 s naming what is still running, every failure's output, and at the end
// every skipped test with its reason. It exits 1 when anything failed.
//
// It is what scripts/test (the README's test command) pipes into.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action  string  `json:"Action"`
	Package string  `json:"Package"`
	Test    string  `json:"Test"`
	Output  string  `json:"Output"`
	Elapsed float64 `json:"Elapsed"`
}

type key struct{ pkg, test string }

// summary accumulates the run.
type summary struct {
	out     io.Writer
	output  map[key][]string // output so far of tests (and packages) still open
	running map[string]time.Time
	// testFailed: packages with a failing test.
	testFailed map[string]bool
	skipped    []string
	failed     []string
	passed     int
	packages   int
}

func newSummary(out io.Writer) *summary {
	return &summary{out: out, output: map[key][]string{}, running: map[string]time.Time{}, testFailed: map[string]bool{}}
}

// add handles one event.
func (s *summary) add(ev event, now time.Time) {
	k := key{ev.Package, ev.Test}
	switch ev.Action {
	case "start":
		s.running[ev.Package] = now
	case "output", "build-output":
		s.output[k] = append(s.output[k], ev.Output)
	case "pass":
		if ev.Test == "" {
			s.packages++
			delete(s.running, ev.Package)
			fmt.Fprintf(s.out, "ok    %s  %.1fs\n", ev.Package, ev.Elapsed)
		} else {
			s.passed++
		}
		delete(s.output, k)
	case "skip":
		if ev.Test == "" {
			delete(s.running, ev.Package)
			s.packages++
		} else {
			s.skipped = append(s.skipped, fmt.Sprintf("%s %s: %s", ev.Package, ev.Test, skipReason(s.output[k])))
		}
		delete(s.output, k)
	case "fail", "build-fail":
		name := ev.Package
		if ev.Test != "" {
			name += " " + ev.Test
			s.testFailed[ev.Package] = true
		} else {
			delete(s.running, ev.Package)
			s.packages++
			fmt.Fprintf(s.out, "FAIL  %s  %.1fs\n", ev.Package, ev.Elapsed)
		}
		// A package that failed without a failing test (a build error, a
		// panic, TestMain) is listed itself.
		if ev.Test != "" || !s.testFailed[ev.Package] {
			s.failed = append(s.failed, name)
		}
		if lines := s.output[k]; len(lines) > 0 {
			fmt.Fprintf(s.out, "--- output of %s\n%s", name, strings.Join(lines, ""))
		}
		delete(s.output, k)
	}
}

// skipReason is the message t.Skip printed (the lines after "--- SKIP").
func skipReason(lines []string) string {
	var why []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		why = append(why, t)
	}
	if len(why) == 0 {
		return "(no reason given)"
	}
	return strings.Join(why, " / ")
}

// heartbeat names the packages still running.
func (s *summary) heartbeat(now time.Time) {
	if len(s.running) == 0 {
		return
	}
	var names []string
	for p, since := range s.running {
		names = append(names, fmt.Sprintf("%s (%ds)", p, int(now.Sub(since).Seconds())))
	}
	slices.Sort(names)
	fmt.Fprintf(s.out, "...   still running: %s\n", strings.Join(names, ", "))
}

// report prints the end of the run and says whether it passed.
func (s *summary) report() bool {
	fmt.Fprintf(s.out, "\n%d packages, %d tests passed, %d skipped, %d failed\n", s.packages, s.passed, len(s.skipped), len(s.failed))
	if len(s.skipped) > 0 {
		fmt.Fprintln(s.out, "skipped:")
		for _, l := range s.skipped {
			fmt.Fprintln(s.out, "  "+l)
		}
	}
	if len(s.failed) > 0 {
		fmt.Fprintln(s.out, "failed:")
		for _, l := range s.failed {
			fmt.Fprintln(s.out, "  "+l)
		}
	}
	return len(s.failed) == 0
}

func main() {
	s := newSummary(os.Stdout)
	lines := make(chan []byte)
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
		for sc.Scan() {
			lines <- slices.Clone(sc.Bytes())
		}
		close(lines)
	}()
	tick := time.NewTicker(30 * time.Second)
	defer tick.Stop()
	for {
		select {
		case now := <-tick.C:
			s.heartbeat(now)
		case line, ok := <-lines:
			if !ok {
				if !s.report() {
					os.Exit(1)
				}
				return
			}
			var ev event
			if json.Unmarshal(line, &ev) != nil {
				fmt.Println(string(line)) // not JSON: a build error from go itself
				continue
			}
			s.add(ev, time.Now())
		}
	}
}
