// Package render turns session logs into safe HTML for the browser:
//
//   - Markdown: model text → HTML with goldmark (GFM tables, strikethrough,
//     autolinks, task lists), fenced code highlighted by chroma with CSS
//     classes, and everything sanitised by a strict bluemonday policy, so no
//     raw HTML, script, event handler or javascript: URL from a model, a tool
//     or a user ever reaches the page.
//   - Transcript view models: Fold turns a run of events (a history page)
//     into Items — user bubbles, reasoning, assistant text, tool cards,
//     approval and question prompts, todo lists, retry and error rows,
//     notices, usage — rendered by the templ components in this package.
//   - Live fragments: Renderer implements ws.Renderer; each session/event
//     push carries a small list of DOM operations (docs/ui.md) built from
//     the same components, so a live page and a reloaded page show the same
//     markup.
package render
