package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// The validator is the one the MCP SDK already links: it knows draft-07
// and draft 2020-12 (the default when "$schema" is absent).
const (
	draft07   = "http://json-schema.org/draft-07/schema#"
	draft2020 = "https://json-schema.org/draft/2020-12/schema"
)

// dialects maps the "$schema" values a tool schema may declare to the one
// the validator knows. Draft-06 validates as draft-07 (draft-07 only added
// keywords). Draft-04 (boolean exclusiveMinimum) and 2019-09 (array
// "items" means what 2020-12's "prefixItems" does) would validate
// differently, so they are refused rather than checked wrongly.
var dialects = map[string]string{
	"http://json-schema.org/draft-07/schema#":       draft07,
	"http://json-schema.org/draft-07/schema":        draft07,
	"https://json-schema.org/draft-07/schema#":      draft07,
	"https://json-schema.org/draft-07/schema":       draft07,
	"http://json-schema.org/draft-06/schema#":       draft07,
	"http://json-schema.org/draft-06/schema":        draft07,
	"https://json-schema.org/draft-06/schema#":      draft07,
	"https://json-schema.org/draft-06/schema":       draft07,
	"https://json-schema.org/draft/2020-12/schema":  draft2020,
	"https://json-schema.org/draft/2020-12/schema#": draft2020,
	"http://json-schema.org/draft/2020-12/schema":   draft2020,
	"http://json-schema.org/draft/2020-12/schema#":  draft2020,
}

// compileSchema parses and resolves a tool's parameter schema. It must be a
// JSON object whose type is "object" (what providers accept as function
// parameters), self-contained (registration never reads files or the
// network), in a dialect the validator knows.
func compileSchema(name string, raw json.RawMessage) (*jsonschema.Resolved, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, errors.New("parameters schema is empty")
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("parameters schema is not valid JSON: %w", err)
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, errors.New("parameters schema must be a JSON object")
	}
	if obj["type"] != "object" {
		return nil, errors.New(`parameters schema must have "type": "object"`)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("compile parameters schema: %w", err)
	}
	if s.Schema != "" {
		d, ok := dialects[s.Schema]
		if !ok {
			return nil, fmt.Errorf("compile parameters schema: $schema %q is not supported (draft-07 and 2020-12 are)", s.Schema)
		}
		s.Schema = d
	}
	rs, err := s.Resolve(&jsonschema.ResolveOptions{
		BaseURI: "mem://tools/" + url.PathEscape(name) + ".json",
		Loader: func(u *url.URL) (*jsonschema.Schema, error) {
			return nil, fmt.Errorf("external schema reference %q is not allowed", u)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("compile parameters schema: %w", err)
	}
	return rs, nil
}

// normalizeArgs maps the model's raw argument string to the JSON the body
// sees: "" becomes {}, invalid JSON becomes the raw text as a JSON string (so
// validation fails with a readable message instead of a parse crash).
func normalizeArgs(raw string) json.RawMessage {
	trimmed := strings.TrimSpace(raw)
	if trimmed == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(trimmed)) {
		return json.RawMessage(trimmed)
	}
	quoted, _ := json.Marshal(raw) // marshalling a string cannot fail
	return quoted
}

// validateArgs checks args against the resolved schema and returns a message
// the model can act on: where the first problem is and what it is (the
// validator stops at the first).
func validateArgs(rs *jsonschema.Resolved, args json.RawMessage) error {
	var inst any
	if err := json.Unmarshal(args, &inst); err != nil {
		return fmt.Errorf("arguments are not valid JSON: %w", err)
	}
	if err := rs.Validate(inst); err != nil {
		return describeValidation(err)
	}
	return nil
}

// describeValidation turns the validator's chain of "validating <schema
// path>: ..." wrappers into "at <instance location>: <problem>". The
// location follows the properties and items the path steps through,
// across $ref jumps (a path that does not extend the previous one); "*"
// stands for an array item, whose index the validator does not report.
func describeValidation(err error) error {
	var loc []string // the location so far, before the current schema's path
	var prev []string
	for e := err; e != nil; {
		inner := errors.Unwrap(e)
		if inner == nil {
			return fmt.Errorf("at /%s: %s", strings.Join(loc, "/"), clip(e.Error()))
		}
		path, ok := strings.CutPrefix(strings.TrimSuffix(e.Error(), ": "+inner.Error()), "validating ")
		if !ok {
			return fmt.Errorf("at /%s: %s", strings.Join(loc, "/"), clip(e.Error()))
		}
		segs := pathSegments(path)
		if isPrefix(prev, segs) {
			loc = append(loc, instanceSteps(segs[len(prev):])...)
		} else {
			loc = append(loc, instanceSteps(segs)...)
		}
		prev = segs
		e = inner
	}
	return err
}

// maxProblem bounds the problem's text: the validator quotes the offending
// value whole (a 1 MB string over maxLength, or invalid JSON as a string),
// and the message goes back into the model's context.
const maxProblem = 300

func clip(s string) string {
	if len(s) <= maxProblem {
		return s
	}
	return strings.ToValidUTF8(s[:maxProblem], "") + "…"
}

// pathSegments splits a schema path ("root", "/properties/a", or an $id)
// into its JSON Pointer segments, left escaped ("a~1b" for "a/b") as the
// instance location needs them; "root" and an $id have none.
func pathSegments(path string) []string {
	if !strings.HasPrefix(path, "/") {
		return nil
	}
	return strings.Split(path[1:], "/")
}

func isPrefix(prefix, segs []string) bool {
	if len(prefix) > len(segs) {
		return false
	}
	for i := range prefix {
		if prefix[i] != segs[i] {
			return false
		}
	}
	return true
}

// instanceSteps keeps, of schema path segments, those that move into the
// instance: a property's name, an item ("*", or its index under
// prefixItems). Applicators (allOf, $defs, if...) stay on the same value.
func instanceSteps(segs []string) []string {
	var out []string
	for i := 0; i < len(segs); i++ {
		switch segs[i] {
		case "properties", "prefixItems":
			if i+1 < len(segs) {
				i++
				out = append(out, segs[i])
			}
		case "items":
			// draft-07's array form: /items/N is the item at N
			if i+1 < len(segs) && isIndex(segs[i+1]) {
				i++
				out = append(out, segs[i])
			} else {
				out = append(out, "*")
			}
		case "additionalItems", "unevaluatedItems", "contains",
			"additionalProperties", "unevaluatedProperties":
			out = append(out, "*")
		case "patternProperties":
			i++ // the pattern names no one property
			out = append(out, "*")
		case "allOf", "anyOf", "oneOf", "$defs", "definitions", "dependentSchemas", "dependencies":
			i++ // followed by an index or a name, on the same value
		}
	}
	return out
}

func isIndex(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}
