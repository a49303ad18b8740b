package builtin

import (
	"context"
	"encoding/json"
	"fmt"

	"harness/internal/session"
	"harness/internal/tools"
)

type todoArgs struct {
	Todos []session.Todo `json:"todos"`
}

func todoWriteTool() tools.Definition {
	return tools.Definition{
		Name: ToolTodoWrite,
		Description: `Replace your todo list for the current task (the user sees it as a checklist). Send the whole list every time: items not included are removed.

Use it for multi-step work: add the steps, mark one in_progress when you start it and completed as soon as it is done. Statuses: pending, in_progress, completed.`,
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "todos": {
      "type": "array",
      "items": {
        "type": "object",
        "properties": {
          "content": {"type": "string", "minLength": 1, "description": "What to do, imperative and short."},
          "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}
        },
        "required": ["content", "status"],
        "additionalProperties": false
      }
    }
  },
  "required": ["todos"],
  "additionalProperties": false
}`),
		Access:  tools.AccessInteract,
		Execute: executeTodoWrite,
	}
}

func executeTodoWrite(ctx context.Context, call *tools.Call) (tools.Result, error) {
	args, err := decodeArgs[todoArgs](call)
	if err != nil {
		return tools.Result{}, err
	}
	if args.Todos == nil {
		args.Todos = []session.Todo{}
	}
	if err := call.Env.Emit(ctx, session.TypeTodoWrite, session.TodoWrite{Todos: args.Todos}); err != nil {
		return tools.Result{}, fmt.Errorf("record todo list: %w", err)
	}
	var pending, inProgress, completed int
	for _, t := range args.Todos {
		switch t.Status {
		case session.TodoPending:
			pending++
		case session.TodoInProgress:
			inProgress++
		case session.TodoCompleted:
			completed++
		}
	}
	r := tools.TextResult(fmt.Sprintf("Updated todo list: %d pending, %d in progress, %d completed", pending, inProgress, completed))
	r.Meta = mustJSON(session.TodoWrite{Todos: args.Todos})
	return r, nil
}
