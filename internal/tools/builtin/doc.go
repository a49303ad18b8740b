// Package builtin holds the built-in tools: bash, read, write, edit, glob,
// grep, ask_user and todo_write, their approval previews and their
// presentation metadata (BashMeta, FileChangeMeta, ReadMeta, SearchMeta),
// which the renderer decodes. Register adds them to a tools.Registry.
//
// File tools confine every path to the session workspace (resolvePath, then
// I/O through the workspace opened as an os.Root); bash and the ripgrep
// backend run their processes through Env.Command, in the agent's sandbox.
package builtin
