// Package builtin holds the built-in tools: bash, read, write, edit, glob,
// grep, ask_user, todo_write and web_fetch, their approval previews and
// their presentation metadata (BashMeta, FileChangeMeta, ReadMeta,
// SearchMeta, WebFetchMeta), which the renderer decodes. Register adds them
// to a tools.Registry.
//
// File tools confine every path to the session workspace (resolvePath, then
// I/O through the workspace opened as an os.Root); bash and the ripgrep
// backend run their processes through Env.Command, in the agent's sandbox.
// web_fetch runs in the server process and polices its own connections
// (webfetch_net.go): the session's network policy, then every resolved
// address, on every redirect.
package builtin
