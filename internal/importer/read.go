package importer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"harness/internal/session"
)

// Caps on one import. The byte cap bounds what a request or a file may
// hold; the event cap bounds the log after packed rows are unpacked.
const (
	MaxBytes  = 64 << 20
	MaxEvents = 1_000_000
)

// Options tune Read; zero values take the defaults.
type Options struct {
	MaxBytes  int64 // default MaxBytes
	MaxEvents int   // default MaxEvents
}

// Format is the kind of log Read recognized.
type Format string

// Formats.
const (
	FormatHarness Format = "harness" // a Harness export
	FormatDSH     Format = "dsh"     // a DeepSeek Harness session log, version 0
)

var utf8BOM = []byte("\xef\xbb\xbf")

// item is one event with the physical line it came from.
type item struct {
	ev   session.Event
	line int
}

// dshHeader is the first line of a DeepSeek Harness log.
type dshHeader struct {
	Type      string          `json:"type"`
	Version   json.RawMessage `json:"version"`
	CreatedAt int64           `json:"createdAt"`
}

// packedEnvelope is a packed row's envelope.
type packedEnvelope struct {
	Type  *string         `json:"type"`
	Seq0  *int64          `json:"seq0"`
	Time0 *int64          `json:"time0"`
	Data  json.RawMessage `json:"data"`
}

// reader turns lines into events.
type reader struct {
	opts      Options
	format    Format
	header    bool  // a DeepSeek Harness header was read
	createdAt int64 // the header's createdAt
	seen      bool  // a non-blank line was read
	next      int64
	items     []item
	notes     []string
}

// Read reads a whole log from r and converts it (see the package
// documentation). Errors are *Error.
func Read(r io.Reader, opts Options) (*Result, error) {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = MaxBytes
	}
	if opts.MaxEvents <= 0 {
		opts.MaxEvents = MaxEvents
	}
	src, done, err := open(r, opts.MaxBytes)
	if err != nil {
		return nil, err
	}
	defer done()
	rd := &reader{opts: opts}
	br := bufio.NewReaderSize(io.LimitReader(src, opts.MaxBytes+1), 64<<10)
	var total int64
	for n := 1; ; n++ {
		b, err := br.ReadBytes('\n')
		total += int64(len(b))
		if total > opts.MaxBytes {
			return nil, lineErr(CodeTooLarge, n, "the input is larger than the import cap of %s", sizeString(opts.MaxBytes))
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, &Error{Code: CodeRead, Line: n, Reason: "read: " + err.Error(), Err: err}
		}
		if n == 1 {
			b = bytes.TrimPrefix(b, utf8BOM)
		}
		if line := bytes.TrimSpace(b); len(line) > 0 {
			hadEvents := rd.seen
			if perr := rd.line(n, line); perr != nil {
				// A last line cut short by a crash is dropped, as DeepSeek
				// Harness drops a torn final record on load.
				var ie *Error
				if err != nil && hadEvents && !bytes.HasSuffix(b, []byte("\n")) && errors.As(perr, &ie) && ie.Code == CodeInvalidJSON {
					rd.notes = append(rd.notes, fmt.Sprintf("line %d is incomplete (a torn last write): dropped", n))
					break
				}
				return nil, perr
			}
		}
		if err != nil {
			break
		}
	}
	if !rd.seen {
		return nil, &Error{Code: CodeEmpty, Reason: "the input is empty: nothing to import"}
	}
	return rd.finish()
}

// line reads physical line n.
func (rd *reader) line(n int, b []byte) error {
	first := !rd.seen
	rd.seen = true
	if b[0] != '{' || !json.Valid(b) {
		var v json.RawMessage
		err := json.Unmarshal(b, &v)
		if err == nil {
			err = errors.New("not a JSON object")
		}
		return &Error{Code: CodeInvalidJSON, Line: n, Reason: "invalid JSON: " + err.Error(), Err: err}
	}
	var probe struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(b, &probe)
	if first {
		switch {
		case probe.Type == "session":
			rd.format = FormatDSH
			return rd.readHeader(n, b)
		case bytes.HasPrefix(b, []byte(`{"seq":`)):
			rd.format = FormatHarness
		default:
			rd.format = FormatDSH
		}
	}
	if probe.Type == "session" {
		return lineErr(CodeUnsupported, n, "a session header may only be the first line")
	}
	if rd.format == FormatDSH && IsPacked(probe.Type) {
		return rd.readPacked(n, b)
	}
	ev, err := session.UnmarshalEvent(b)
	if err != nil {
		reason := err.Error()
		var se *session.Error
		if errors.As(err, &se) {
			reason = se.Message
		}
		return &Error{Code: CodeInvalid, Line: n, Reason: reason, Err: err}
	}
	if err := rd.checkSeq(n, ev.Seq, 1); err != nil {
		return err
	}
	rd.items = append(rd.items, item{ev: ev, line: n})
	return nil
}

func (rd *reader) readHeader(n int, b []byte) error {
	var h dshHeader
	if err := json.Unmarshal(b, &h); err != nil {
		return &Error{Code: CodeInvalidJSON, Line: n, Reason: "session header: " + err.Error(), Err: err}
	}
	rd.header = true
	if h.CreatedAt > 0 && h.CreatedAt <= 1<<53-1 {
		rd.createdAt = h.CreatedAt
	}
	switch v := string(h.Version); v {
	case "":
		rd.notes = append(rd.notes, "the header names no format version: read as version 0")
	case "0":
	default:
		return lineErr(CodeVersion, n, "unknown session format version %s (only version 0 can be imported)", v)
	}
	return nil
}

func (rd *reader) readPacked(n int, b []byte) error {
	var p packedEnvelope
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return &Error{Code: CodeInvalidJSON, Line: n, Reason: "packed row: " + err.Error(), Err: err}
	}
	if p.Type == nil || p.Seq0 == nil || p.Time0 == nil || p.Data == nil {
		return lineErr(CodeInvalid, n, "packed row: type, seq0, time0 and data are required")
	}
	evs, err := Unpack(*p.Type, *p.Seq0, *p.Time0, p.Data)
	if err != nil {
		return &Error{Code: CodeUnsupported, Line: n, Reason: err.Error(), Err: err}
	}
	if err := rd.checkSeq(n, *p.Seq0, len(evs)); err != nil {
		return err
	}
	for _, ev := range evs {
		rd.items = append(rd.items, item{ev: ev, line: n})
	}
	return nil
}

// checkSeq checks that count events starting at seq continue the log and
// stay under the event cap.
func (rd *reader) checkSeq(n int, seq int64, count int) error {
	switch {
	case seq < rd.next:
		return lineErr(CodeSeq, n, "duplicate seq %d: the log already reached seq %d", seq, rd.next-1)
	case seq > rd.next:
		return lineErr(CodeSeq, n, "seq gap: expected seq %d, got %d", rd.next, seq)
	}
	rd.next += int64(count)
	if rd.next > int64(rd.opts.MaxEvents) {
		return lineErr(CodeTooLarge, n, "more than %d events (the import cap)", rd.opts.MaxEvents)
	}
	return nil
}

// finish converts (DeepSeek Harness), renumbers, validates and closes the
// log, and summarizes it.
func (rd *reader) finish() (*Result, error) {
	items := rd.items
	rd.items = nil // validate frees each item once the log holds it
	if rd.format == FormatDSH {
		c := newConverter()
		var err error
		if items, err = c.convertAll(items); err != nil {
			return nil, err
		}
		rd.notes = append(rd.notes, c.notes...)
	}
	events, closed, err := validate(items)
	if err != nil {
		return nil, err
	}
	if closed > 0 {
		rd.notes = append(rd.notes, fmt.Sprintf("the log ended inside a turn: %d closing events were added, as crash repair does", closed))
	}
	res := summarize(rd.format, events)
	res.Header = session.Header{CreatedAt: rd.createdAt}
	res.Closed = closed
	res.Notes = rd.notes
	return res, nil
}

// sizeString writes a cap in MiB when it is whole MiB, else in bytes.
func sizeString(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
