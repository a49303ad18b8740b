package builtin

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"harness/internal/tools"
)

// Error names and codes of the built-in tools (the pipeline's own are in
// package tools).
const (
	NameFs        = "FsError"
	NameWorkspace = "WorkspaceError"
	NameQuestion  = "QuestionError"

	CodePathOutsideWorkspace = "PATH_OUTSIDE_WORKSPACE"
	CodeFsNotObserved        = "FS_NOT_OBSERVED"
	CodeFsStaleVersion       = "FS_STALE_VERSION"
	CodeFsNotFound           = "FS_NOT_FOUND"
	CodeFsIsDirectory        = "FS_IS_DIRECTORY"
	CodeFsBinary             = "FS_BINARY_FILE"
	CodeEditNoMatch          = "EDIT_NO_MATCH"
	CodeEditAmbiguous        = "EDIT_AMBIGUOUS"
	CodeInvalidPattern       = "INVALID_PATTERN"
	CodeQuestionCancelled    = "QUESTION_CANCELLED"
)

// Tool names.
const (
	ToolBash      = "bash"
	ToolRead      = "read"
	ToolWrite     = "write"
	ToolEdit      = "edit"
	ToolGlob      = "glob"
	ToolGrep      = "grep"
	ToolAskUser   = "ask_user"
	ToolTodoWrite = "todo_write"
	ToolWebFetch  = "web_fetch"
)

// GrepBackend selects how grep searches.
type GrepBackend string

const (
	GrepAuto    GrepBackend = ""   // ripgrep when on PATH, else pure Go
	GrepGo      GrepBackend = "go" // always pure Go
	GrepRipgrep GrepBackend = "rg" // ripgrep (falls back to Go when absent)
)

// Defaults of the built-in tools (upstream numbers).
const (
	DefaultBashTimeout    = 120 * time.Second
	DefaultBashMaxTimeout = 600 * time.Second
	DefaultBashKillGrace  = 3 * time.Second
	DefaultBashOutputCap  = 64_000
	DefaultSearchTimeout  = 30 * time.Second
)

// Options configures the built-in tools; zero values mean defaults.
type Options struct {
	BashPath       string        // default "bash" from PATH
	BashTimeout    time.Duration // default 120 s
	BashMaxTimeout time.Duration // cap on timeout_ms, default 600 s
	BashKillGrace  time.Duration // SIGTERM → SIGKILL, default 3 s
	BashOutputCap  int           // bytes of stdout+stderr kept, default 64,000
	// Environ is the host environment the tool environment is taken from
	// (only PATH, HOME and LANG); nil means os.Environ().
	Environ []string
	// ExtraEnv is added to every tool process; names that look like
	// secrets (KEY, TOKEN, SECRET, PASSWORD) are dropped.
	ExtraEnv      []string
	Grep          GrepBackend
	RipgrepPath   string        // default "rg" from PATH
	SearchTimeout time.Duration // glob and grep, default 30 s
	// WebFetch configures web_fetch (allow-list, reserved addresses, caps).
	WebFetch WebFetchOptions
}

func (o Options) withDefaults() Options {
	if o.BashPath == "" {
		o.BashPath = "bash"
	}
	if o.BashTimeout <= 0 {
		o.BashTimeout = DefaultBashTimeout
	}
	if o.BashMaxTimeout <= 0 {
		o.BashMaxTimeout = DefaultBashMaxTimeout
	}
	if o.BashKillGrace <= 0 {
		o.BashKillGrace = DefaultBashKillGrace
	}
	if o.BashOutputCap <= 0 {
		o.BashOutputCap = DefaultBashOutputCap
	}
	if o.Environ == nil {
		o.Environ = os.Environ()
	}
	if o.RipgrepPath == "" {
		o.RipgrepPath = "rg"
	}
	if o.SearchTimeout <= 0 {
		o.SearchTimeout = DefaultSearchTimeout
	}
	o.WebFetch = o.WebFetch.withDefaults()
	return o
}

// Definitions returns the built-in tools configured by opts.
func Definitions(opts Options) []tools.Definition {
	opts = opts.withDefaults()
	return []tools.Definition{
		bashTool(opts),
		readTool(),
		writeTool(),
		editTool(),
		globTool(opts),
		grepTool(opts),
		askUserTool(),
		todoWriteTool(),
		webFetchTool(opts.WebFetch),
	}
}

// Register registers every built-in tool in r. Their parameter schemas are
// compiled on first use (Registry.RegisterLazy), so a server start does not
// pay for them; the schemas are static and
// TestSchemasCompile compiles them all.
func Register(r *tools.Registry, opts Options) error {
	for _, d := range Definitions(opts) {
		if err := r.RegisterLazy(d); err != nil {
			return fmt.Errorf("register built-in tools: %w", err)
		}
	}
	return nil
}

// decodeArgs unmarshals validated arguments into the tool's args struct.
func decodeArgs[T any](call *tools.Call) (T, error) {
	var v T
	if err := json.Unmarshal(call.Args, &v); err != nil {
		return v, tools.Errorf(tools.NameToolArgs, tools.CodeInvalidArgs, "invalid arguments for %q: %v", call.Name, err)
	}
	return v, nil
}

// mustJSON marshals presentation metadata; the types used cannot fail.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

// alwaysSafe is the classifier of concurrency-safe tools.
func alwaysSafe(json.RawMessage) bool { return true }
