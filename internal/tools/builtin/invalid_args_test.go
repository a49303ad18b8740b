package builtin

import (
	"strings"
	"testing"

	"harness/internal/tools"
)

// Garbage arguments never crash a built-in tool: they give a readable
// INVALID_ARGS result naming the problem.
func TestBuiltinsRejectGarbageArgs(t *testing.T) {
	t.Parallel()
	garbage := []string{"not json", "null", "[]", "123", `"str"`, "{", `{"file_path": 5}`, `{"unknown": true}`,
		`{"pattern": null}`, `{"questions": "many"}`, `{"todos": [{"content": 1}]}`, "\x00\xff", `{"command": ["ls"]}`}
	for _, name := range []string{ToolBash, ToolRead, ToolWrite, ToolEdit, ToolGlob, ToolGrep, ToolAskUser, ToolTodoWrite, ToolWebFetch} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, Options{})
			for _, g := range garbage {
				r := h.run(name, g)
				text := mustCode(t, r, tools.CodeInvalidArgs)
				if !strings.HasPrefix(text, "Error: invalid arguments for \""+name+"\": ") || !strings.Contains(text, "at /") {
					t.Errorf("%s %q: message does not locate the problem: %q", name, g, text)
				}
			}
			if len(h.env.rec.trace("ask")) != 0 || len(h.env.rec.emits("todo/write")) != 0 {
				t.Fatal("a tool body ran on invalid arguments")
			}
		})
	}
}

// FuzzFileToolArgs feeds arbitrary argument text to the side-effect-free
// (or workspace-confined) tools: any outcome is fine except a contained
// panic. bash is excluded: valid commands would run.
func FuzzFileToolArgs(f *testing.F) {
	for _, s := range []string{"", "{}", `{"file_path":"a"}`, `{"file_path":"../x","offset":1}`, `{"pattern":"**/*","path":"."}`,
		`{"pattern":"(","include":"{"}`, `{"file_path":"a","old_string":"x","new_string":"y"}`, `{"file_path":"dir/","content":""}`} {
		f.Add(s, uint8(0))
	}
	names := []string{ToolRead, ToolWrite, ToolEdit, ToolGlob, ToolGrep, ToolTodoWrite}
	f.Fuzz(func(t *testing.T, args string, which uint8) {
		h := newHarness(t, Options{})
		h.write("a", "x\n")
		r := h.run(names[int(which)%len(names)], args)
		if errCode(r) == tools.CodeToolPanic {
			t.Fatalf("panic on %q: %s", args, resultText(r))
		}
	})
}
