package render

import (
	"context"
	"io"
	"strconv"
	"strings"

	"github.com/a-h/templ"
)

// Op names a DOM operation of a live fragment (docs/ui.md).
type Op string

// The operations the browser applies, each a <template data-op=...>.
const (
	// OpUpsert: each element child replaces the element with its id, or
	// is appended to data-parent (default: the transcript).
	OpUpsert Op = "upsert"
	// OpReplacePrefix: the content replaces every element whose id starts
	// with data-prefix, at the first one's place (appended when none).
	OpReplacePrefix Op = "replace-prefix"
	// OpFill: the content replaces the children of data-target.
	OpFill Op = "fill"
	// OpAppendText: the template's text is appended to data-target.
	OpAppendText Op = "append-text"
	// OpRemove: data-target is removed.
	OpRemove Op = "remove"
	// OpPreview: the content is the markdown of streaming block
	// data-target up to seq data-upto; it replaces the block's body and
	// empties its raw tail.
	OpPreview Op = "preview"
)

// Parents of upserted elements outside the transcript.
const (
	ParentTranscript = "transcript"
	ParentDock       = "dock"
	ParentTakeover   = "takeover"
	// ParentChatHead is the chat page's header (the context meter, the
	// model label, the permission mode).
	ParentChatHead = "chat-head"
	// ParentFooter is the chat page's bottom area, which holds the
	// session figures (#session-figures).
	ParentFooter = "composer-area"
)

// fragment builds the HTML of one push.
type fragment struct {
	sb  strings.Builder
	ctx context.Context
}

func newFragment() *fragment { return &fragment{ctx: context.Background()} }

func (f *fragment) open(op Op, attrs ...string) {
	f.sb.WriteString(`<template data-op="`)
	f.sb.WriteString(string(op))
	f.sb.WriteByte('"')
	for i := 0; i+1 < len(attrs); i += 2 {
		f.sb.WriteString(` data-`)
		f.sb.WriteString(attrs[i])
		f.sb.WriteString(`="`)
		f.sb.WriteString(escapeText(attrs[i+1]))
		f.sb.WriteByte('"')
	}
	f.sb.WriteByte('>')
}

func (f *fragment) close() { f.sb.WriteString("</template>") }

func (f *fragment) render(c templ.Component) error { return c.Render(f.ctx, &f.sb) }

// upsert adds items (transcript) by id.
func (f *fragment) upsert(parent string, comps ...templ.Component) error {
	if parent == ParentTranscript {
		f.open(OpUpsert)
	} else {
		f.open(OpUpsert, "parent", parent)
	}
	for _, c := range comps {
		if err := f.render(c); err != nil {
			return err
		}
	}
	f.close()
	return nil
}

func (f *fragment) upsertItems(items ...Item) error {
	if len(items) == 0 {
		return nil
	}
	f.open(OpUpsert)
	for _, it := range items {
		if err := f.render(ItemView(it)); err != nil {
			return err
		}
	}
	f.close()
	return nil
}

func (f *fragment) replacePrefix(prefix string, items []Item) error {
	f.open(OpReplacePrefix, "prefix", prefix)
	for _, it := range items {
		if err := f.render(ItemView(it)); err != nil {
			return err
		}
	}
	f.close()
	return nil
}

func (f *fragment) fill(target string, c templ.Component) error {
	f.open(OpFill, "target", target)
	if err := f.render(c); err != nil {
		return err
	}
	f.close()
	return nil
}

func (f *fragment) remove(target string) {
	f.open(OpRemove, "target", target)
	f.close()
}

func (f *fragment) appendText(target, text string) {
	f.open(OpAppendText, "target", target)
	f.sb.WriteString(escapeText(text))
	f.close()
}

func (f *fragment) preview(target string, upto int64, html string) {
	f.open(OpPreview, "target", target, "upto", strconv.FormatInt(upto, 10))
	f.sb.WriteString(html)
	f.close()
}

func (f *fragment) String() string { return f.sb.String() }

// textComponent renders escaped text.
func textComponent(s string) templ.Component {
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		_, err := io.WriteString(w, escapeText(s))
		return err
	})
}
