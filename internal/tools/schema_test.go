package tools

import (
	"encoding/json"
	"strings"
	"testing"
)

// An invalid argument is reported at its place in the arguments: through
// nested properties, array items (by index where the schema has one),
// $ref jumps into $defs or draft-07's definitions.
func TestValidateArgsLocatesTheProblem(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, schema, args, want string
	}{
		{"missing required", `{"type":"object","required":["command"],"properties":{"command":{"type":"string"}}}`,
			`{}`, `at /: required: missing properties: ["command"]`},
		{"nested property", `{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"string"}}}}}`,
			`{"a":{"b":5}}`, `at /a/b: type:`},
		{"array item", `{"type":"object","properties":{"qs":{"type":"array","items":{"type":"object","required":["id"]}}}}`,
			`{"qs":[{}]}`, `at /qs/*: required: missing properties: ["id"]`},
		{"ref into defs", `{"type":"object","$defs":{"q":{"type":"object","properties":{"id":{"type":"string"}}}},` +
			`"properties":{"qs":{"type":"array","items":{"$ref":"#/$defs/q"}}}}`,
			`{"qs":[{"id":1}]}`, `at /qs/*/id: type:`},
		{"draft-07 definitions and item index", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object",` +
			`"definitions":{"s":{"type":"string"}},"properties":{"t":{"type":"array","items":[{"$ref":"#/definitions/s"}]}}}`,
			`{"t":[1]}`, `at /t/0: type:`},
		{"unknown property", `{"type":"object","properties":{"a":{}},"additionalProperties":false}`,
			`{"x":1}`, `at /: unexpected additional properties ["x"]`},
		{"enum", `{"type":"object","properties":{"format":{"enum":["text","markdown"]}}}`,
			`{"format":"pdf"}`, `at /format: enum:`},
		{"long value", `{"type":"object","properties":{"s":{"type":"string","maxLength":3}}}`,
			`{"s":"` + strings.Repeat("é", 1<<20) + `"}`, `at /s: maxLength:`},
		{"property name with a slash", `{"type":"object","properties":{"a/b":{"type":"integer"}}}`,
			`{"a/b":"x"}`, `at /a~1b: type:`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rs, err := compileSchema("t", json.RawMessage(tt.schema))
			if err != nil {
				t.Fatal(err)
			}
			err = validateArgs(rs, json.RawMessage(tt.args))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("error %.500v, want it to start with %q", err, tt.want)
			}
			// The offending value is quoted, but not whole.
			if len(err.Error()) > 400 {
				t.Fatalf("message of %d bytes", len(err.Error()))
			}
		})
	}
}

// Schemas declare their dialect with "$schema": draft-07 and 2020-12 are
// validated as such, draft-06 as draft-07 (which only added keywords);
// draft-04 and 2019-09, which the validator would check by other rules,
// are refused when the tool registers, never validated wrongly.
func TestSchemaDialects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		dialect string
		ok      bool
	}{
		{"", true},
		{"http://json-schema.org/draft-07/schema#", true},
		{"https://json-schema.org/draft-07/schema", true},
		{"http://json-schema.org/draft-06/schema#", true},
		{"https://json-schema.org/draft/2020-12/schema", true},
		{"https://json-schema.org/draft/2020-12/schema#", true},
		{"http://json-schema.org/draft-04/schema#", false},
		{"https://json-schema.org/draft/2019-09/schema", false},
		{"https://example.com/my-dialect", false},
	}
	for _, tt := range tests {
		t.Run(tt.dialect, func(t *testing.T) {
			t.Parallel()
			schema := map[string]any{"type": "object", "required": []string{"n"},
				"properties": map[string]any{"n": map[string]any{"type": "integer", "minimum": 1}}}
			if tt.dialect != "" {
				schema["$schema"] = tt.dialect
			}
			raw, _ := json.Marshal(schema)
			rs, err := compileSchema("t", raw)
			if !tt.ok {
				if err == nil || !strings.Contains(err.Error(), "is not supported") {
					t.Fatalf("compiled: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := validateArgs(rs, json.RawMessage(`{"n":2}`)); err != nil {
				t.Fatalf("valid arguments: %v", err)
			}
			if err := validateArgs(rs, json.RawMessage(`{"n":0}`)); err == nil || !strings.HasPrefix(err.Error(), "at /n: minimum:") {
				t.Fatalf("invalid arguments: %v", err)
			}
		})
	}
}
