package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// noLoader refuses every external reference: tool schemas must be
// self-contained, and registration must never read files or the network.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external schema reference %q is not allowed", url)
}

// compileSchema compiles a tool's parameter schema. It must be a JSON object
// whose type is "object" (what providers accept as function parameters).
func compileSchema(name string, raw json.RawMessage) (*jsonschema.Schema, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, errors.New("parameters schema is empty")
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parameters schema is not valid JSON: %w", err)
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, errors.New("parameters schema must be a JSON object")
	}
	if obj["type"] != "object" {
		return nil, errors.New(`parameters schema must have "type": "object"`)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	url := "mem://tools/" + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("add parameters schema: %w", err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("compile parameters schema: %w", err)
	}
	return sch, nil
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

// validateArgs checks args against the compiled schema and returns a message
// the model can act on, naming every problem.
func validateArgs(sch *jsonschema.Schema, args json.RawMessage) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return fmt.Errorf("arguments are not valid JSON: %w", err)
	}
	if err := sch.Validate(inst); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return errors.New(describeValidation(ve))
		}
		return err
	}
	return nil
}

// describeValidation flattens a validation error into "at <pointer>: <problem>"
// items, dropping the generic top-level "validation failed" line.
func describeValidation(ve *jsonschema.ValidationError) string {
	out := ve.BasicOutput()
	var problems []string
	seen := map[string]bool{}
	for _, u := range out.Errors {
		if u.Error == nil {
			continue
		}
		loc := u.InstanceLocation
		if loc == "" {
			loc = "/"
		}
		p := fmt.Sprintf("at %s: %s", loc, u.Error.String())
		if !seen[p] {
			seen[p] = true
			problems = append(problems, p)
		}
	}
	if len(problems) == 0 {
		return ve.Error()
	}
	return strings.Join(problems, "; ")
}
