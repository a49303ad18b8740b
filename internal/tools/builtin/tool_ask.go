package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"harness/internal/session"
	"harness/internal/tools"
)

type askOption struct {
	Label       string `json:"label"`
	Description string `json:"description"`
}

type askQuestion struct {
	ID          string      `json:"id"`
	Question    string      `json:"question"`
	Header      string      `json:"header"`
	Options     []askOption `json:"options"`
	MultiSelect bool        `json:"multi_select"`
}

type askArgs struct {
	Questions []askQuestion `json:"questions"`
}

// askAnswers is the result text of ask_user.
type askAnswers struct {
	Answers []session.Answer `json:"answers"`
}

func askUserTool() tools.Definition {
	return tools.Definition{
		Name: ToolAskUser,
		Description: `Ask the user one or more questions and wait for the answers. Use it when a decision genuinely needs the user (ambiguous requirements, a choice between approaches, missing information), not for things you can find out yourself.

Each question has a unique id, the question text, an optional short header, and optional options (label + description) the user can pick from; multi_select allows several. The user may also answer in their own words. The result is JSON: {"answers":[{"id","selected":[labels],"custom"?}]}.`,
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "questions": {
      "type": "array",
      "minItems": 1,
      "maxItems": 10,
      "items": {
        "type": "object",
        "properties": {
          "id": {"type": "string", "minLength": 1, "description": "Unique id of the question, echoed in the answer."},
          "question": {"type": "string", "minLength": 1, "description": "The question, as a complete sentence."},
          "header": {"type": "string", "description": "Optional short label (a few words)."},
          "options": {
            "type": "array",
            "items": {
              "type": "object",
              "properties": {
                "label": {"type": "string", "minLength": 1, "description": "The choice as shown and returned."},
                "description": {"type": "string", "description": "What choosing it means."}
              },
              "required": ["label"],
              "additionalProperties": false
            }
          },
          "multi_select": {"type": "boolean", "description": "Allow choosing several options (default false)."}
        },
        "required": ["id", "question"],
        "additionalProperties": false
      }
    }
  },
  "required": ["questions"],
  "additionalProperties": false
}`),
		Access:  tools.AccessInteract,
		Execute: executeAskUser,
	}
}

func executeAskUser(ctx context.Context, call *tools.Call) (tools.Result, error) {
	args, err := decodeArgs[askArgs](call)
	if err != nil {
		return tools.Result{}, err
	}
	seen := map[string]bool{}
	qs := make([]session.Question, 0, len(args.Questions))
	for _, q := range args.Questions {
		if seen[q.ID] {
			return tools.Result{}, tools.Errorf(tools.NameToolArgs, tools.CodeInvalidArgs, "question id %q is used twice; ids must be unique", q.ID)
		}
		seen[q.ID] = true
		sq := session.Question{ID: q.ID, Question: q.Question, Header: q.Header, MultiSelect: q.MultiSelect}
		labels := map[string]bool{}
		for _, o := range q.Options {
			if labels[o.Label] {
				return tools.Result{}, tools.Errorf(tools.NameToolArgs, tools.CodeInvalidArgs, "question %q lists option %q twice", q.ID, o.Label)
			}
			labels[o.Label] = true
			sq.Options = append(sq.Options, session.QuestionOption{Label: o.Label, Description: o.Description})
		}
		qs = append(qs, sq)
	}
	answers, err := call.Env.Ask(ctx, call, qs)
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, context.Canceled) {
			return tools.Result{}, tools.Errorf(NameQuestion, CodeQuestionCancelled, "the questions were withdrawn before the user answered (the turn was cancelled)")
		}
		return tools.Result{}, fmt.Errorf("ask the user: %w", err)
	}
	for i := range answers {
		if answers[i].Selected == nil {
			answers[i].Selected = []string{}
		}
	}
	if answers == nil {
		answers = []session.Answer{}
	}
	text, err := json.Marshal(askAnswers{Answers: answers})
	if err != nil {
		return tools.Result{}, fmt.Errorf("encode answers: %w", err)
	}
	r := tools.TextResult(string(text))
	r.Meta = mustJSON(map[string]any{"questions": qs, "answers": answers})
	return r, nil
}
