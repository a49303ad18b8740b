package client

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// decodeEventPush decodes the frames a follower gets most, session/event
// and session/events pushes, in one pass and without reflection: at a few
// hundred frames a second per socket, encoding/json's two passes over each
// frame were most of a viewer's CPU. The pass checks the JSON grammar
// (RFC 8259) as it goes, so it refuses what json.Valid refuses. It reports false for any frame outside that
// shape (another key, a null, an escaped key, a number that is not an
// integer...), which the caller then decodes the general way; when it
// reports true, p is what the general decode would have made, except
// that Event.Data and SurfaceOp share the frame's bytes (as Raw does).
// Session ids and event types come from in when it has them (nil: no
// interning).
func decodeEventPush(b []byte, p *Push, in *interner) bool {
	// The server writes "ch" first; other frames are not worth a scan.
	if !bytes.HasPrefix(b, []byte(`{"ch":"session/event`)) {
		return false
	}
	s := scanner{b: b, in: in}
	var out Push
	ok := s.object(func(key []byte) bool {
		switch string(key) {
		case "ch":
			v, ok := s.str()
			out.Ch = v
			return ok
		case "session":
			v, ok := s.name()
			out.Session = v
			return ok
		case "html":
			v, ok := s.str()
			out.HTML = v
			return ok
		case "event":
			ev := new(Event)
			out.Event = ev
			return s.event(ev)
		case "events":
			out.Events = out.Events[:0]
			if out.Events == nil {
				out.Events = []Event{}
			}
			return s.array(func() bool {
				out.Events = append(out.Events, Event{})
				return s.event(&out.Events[len(out.Events)-1])
			})
		}
		return false
	})
	if s.ws(); !ok || s.i != len(s.b) || out.Ch != ChEvent && out.Ch != ChEvents {
		return false
	}
	out.Raw = b
	*p = out
	return true
}

// scanner walks a JSON text, checking its grammar.
type scanner struct {
	b  []byte
	i  int
	in *interner
}

// interner keeps the strings a connection's pushes repeat (its sessions'
// ids, the event types), so a push does not allocate them again: at 50
// pushes a second per socket these were most of a viewer's garbage. It
// keeps the last few, compared byte for byte: a map costs more than the
// allocation it saves on a connection's cold cache. Reader goroutine only.
type interner struct {
	kept [8]string
	next int
}

// str is raw as a string, a kept one when raw is one of them.
func (in *interner) str(raw []byte) string {
	if in == nil {
		return string(raw)
	}
	for _, v := range in.kept {
		if v == string(raw) { // no allocation for the comparison
			return v
		}
	}
	v := string(raw)
	in.kept[in.next] = v
	in.next = (in.next + 1) % len(in.kept)
	return v
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// next skips white space and reports whether c comes next, taking it.
func (s *scanner) next(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// object walks an object, calling field with each key positioned before
// its value. An escaped or repeated key fails: the general decode has
// rules for those (case folding, merging) that this one does not copy.
func (s *scanner) object(field func(key []byte) bool) bool {
	if !s.next('{') {
		return false
	}
	if s.next('}') {
		return true
	}
	var seen [8][]byte
	n := 0
	for {
		s.ws()
		key, ok := s.rawString()
		if !ok || bytes.IndexByte(key, '\\') >= 0 || !s.next(':') || n == len(seen) {
			return false
		}
		for _, k := range seen[:n] {
			if bytes.Equal(k, key) {
				return false
			}
		}
		seen[n], n = key, n+1
		s.ws()
		if !field(key) {
			return false
		}
		if s.next('}') {
			return true
		}
		if !s.next(',') {
			return false
		}
	}
}

// array walks an array, calling elem positioned before each element.
func (s *scanner) array(elem func() bool) bool {
	if !s.next('[') {
		return false
	}
	if s.next(']') {
		return true
	}
	for {
		s.ws()
		if !elem() {
			return false
		}
		if s.next(']') {
			return true
		}
		if !s.next(',') {
			return false
		}
	}
}

// plainByte marks the bytes a JSON string holds as they are: not a
// quote, a backslash or a control character. rawString skips runs of
// them with one table lookup a byte; the strings of a turn's end (its
// whole text, twice) are most of what a viewer decodes then.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// rawString returns the bytes between the quotes of the string at s.i;
// false for a control character or a malformed escape.
func (s *scanner) rawString() ([]byte, bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	start := s.i + 1
	for j := start; ; j++ {
		for j < len(s.b) && plainByte[s.b[j]] {
			j++
		}
		if j >= len(s.b) {
			return nil, false
		}
		switch s.b[j] {
		case '"':
			s.i = j + 1
			return s.b[start:j], true
		case '\\':
			if j+1 >= len(s.b) {
				return nil, false
			}
			j++
			switch s.b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(s.b) || !isHex(s.b[j+1]) || !isHex(s.b[j+2]) || !isHex(s.b[j+3]) || !isHex(s.b[j+4]) {
					return nil, false
				}
				j += 4
			default:
				return nil, false
			}
		default: // a control character
			return nil, false
		}
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// str decodes a string value (false for anything else).
func (s *scanner) str() (string, bool) { return s.stringValue(nil) }

// name decodes a string value that repeats across pushes (interned).
func (s *scanner) name() (string, bool) { return s.stringValue(s.in) }

// stringValue decodes a string value, taking a plain one from in.
func (s *scanner) stringValue(in *interner) (string, bool) {
	start := s.i
	raw, ok := s.rawString()
	if !ok {
		return "", false
	}
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return in.str(raw), true
	}
	var v string
	err := json.Unmarshal(s.b[start:s.i], &v)
	return v, err == nil
}

// int decodes an integer value.
func (s *scanner) int() (int64, bool) {
	start := s.i
	integer, ok := s.number()
	if !ok || !integer { // a fraction or exponent: the general decode decides
		return 0, false
	}
	b := s.b[start:s.i]
	digits := bytes.TrimPrefix(b, []byte("-"))
	if len(digits) > 18 { // may overflow: strconv decides
		v, err := strconv.ParseInt(string(b), 10, 64)
		return v, err == nil
	}
	var v int64
	for _, c := range digits { // number checked they are digits
		v = 10*v + int64(c-'0')
	}
	if len(digits) < len(b) {
		v = -v
	}
	return v, true
}

// number skips a number (RFC 8259 6); integer: no fraction, no exponent.
func (s *scanner) number() (integer, ok bool) {
	digits := func() bool {
		start := s.i
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
		}
		return s.i > start
	}
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case !digits():
		return false, false
	}
	integer = true
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if !digits() {
			return false, false
		}
		integer = false
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if !digits() {
			return false, false
		}
		integer = false
	}
	return integer, true
}

// value skips any value, checking it, and returns its bytes.
func (s *scanner) value() ([]byte, bool) {
	start := s.i
	if !s.skip(0) {
		return nil, false
	}
	return s.b[start:s.i], true
}

// maxDepth is encoding/json's nesting limit.
const maxDepth = 10000

func (s *scanner) skip(depth int) bool {
	if s.i >= len(s.b) || depth >= maxDepth {
		return false
	}
	switch s.b[s.i] {
	case '{': // any keys, unlike object
		s.i++
		if s.next('}') {
			return true
		}
		for {
			s.ws()
			if _, ok := s.rawString(); !ok || !s.next(':') {
				return false
			}
			s.ws()
			if !s.skip(depth + 1) {
				return false
			}
			if s.next('}') {
				return true
			}
			if !s.next(',') {
				return false
			}
		}
	case '[':
		return s.array(func() bool { return s.skip(depth + 1) })
	case '"':
		_, ok := s.rawString()
		return ok
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	}
	_, ok := s.number()
	return ok
}

// literal takes word.
func (s *scanner) literal(word string) bool {
	if !bytes.HasPrefix(s.b[s.i:], []byte(word)) {
		return false
	}
	s.i += len(word)
	return true
}

// event decodes an event object.
func (s *scanner) event(ev *Event) bool {
	return s.object(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "seq":
			ev.Seq, ok = s.int()
		case "time":
			ev.Time, ok = s.int()
		case "from":
			ev.From, ok = s.int()
		case "type":
			ev.Type, ok = s.name()
		case "data":
			ev.Data, ok = s.value()
			ok = ok && string(ev.Data) != "null"
		case "surfaceOp":
			ev.SurfaceOp, ok = s.value()
			ok = ok && string(ev.SurfaceOp) != "null"
		case "ignorable":
			if ok = s.literal("true"); ok {
				ev.Ignorable = true
			} else {
				ok = s.literal("false")
			}
		case "sourceEventSeqs":
			ev.SourceEventSeqs = ev.SourceEventSeqs[:0]
			if ev.SourceEventSeqs == nil {
				ev.SourceEventSeqs = []int64{}
			}
			ok = s.array(func() bool {
				v, ok := s.int()
				ev.SourceEventSeqs = append(ev.SourceEventSeqs, v)
				return ok
			})
		}
		return ok
	})
}
