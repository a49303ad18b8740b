// Package render turns session logs into safe HTML for the browser:
//
//   - Markdown: model text → HTML with goldmark (GFM tables, strikethrough,
//     autolinks, task lists), fenced code highlighted by chroma with CSS
//     classes, and everything sanitised by a strict bluemonday policy, so no
//     raw HTML, script, event handler or javascript: URL from a model, a tool
//     or a user ever reaches the page.
//   - One projection of the log (Projection, projection.go): a single switch
//     decodes each event once and turns it into transcript items — user
//     bubbles, reasoning, assistant text, tool cards, approval and question
//     prompts, todo lists, retry and error rows, notices, usage — and into
//     the DOM operations (docs/ui.md) that bring a live page from the items
//     before the event to the items after it.
//   - Pages: Markdown.Fold runs that projection over a run of events (a
//     history page) and returns its items, rendered by the templ components
//     in this package.
//   - Live fragments: NewProjection follows one session event by event (the
//     WebSocket hub keeps one per session topic); Fragment renders the last
//     event's operations once per viewer class with the same components, so
//     a live page and a reloaded page show the same markup.
//
// The package depends on the log's vocabulary (session, llm, the tools'
// result metas) and on nothing that serves it: the hub consumes a
// Projection through its own small interface.
package render
