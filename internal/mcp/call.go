package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"harness/internal/llm"
	"harness/internal/tools"
)

// call runs one tool call on the server, starting it first when it is not
// running (the first call, or the first after it exited).
func (c *conn) call(ctx context.Context, call *tools.Call, server, tool string) (tools.Result, error) {
	c.mu.Lock()
	cs, err := c.sessionLocked(ctx)
	c.mu.Unlock()
	if err != nil {
		if ctx.Err() != nil {
			return tools.Result{}, ctx.Err()
		}
		return tools.Result{}, tools.Errorf(NameServerError, CodeServerUnavailable,
			"the MCP server %q could not be started: %v", server, err) // redacted by sessionLocked
	}

	params := &sdk.CallToolParams{Name: tool, Arguments: call.Args}
	token := call.ID
	if token == "" {
		token = strconv.Itoa(call.Index)
	}
	params.SetProgressToken(token)
	c.pmu.Lock()
	c.calls[token] = call
	c.pmu.Unlock()
	defer func() {
		c.pmu.Lock()
		delete(c.calls, token)
		c.pmu.Unlock()
	}()

	res, err := cs.CallTool(ctx, params)
	if err != nil {
		if ctx.Err() != nil {
			return tools.Result{}, ctx.Err() // the pipeline reports the timeout or the cancel
		}
		gone := c.gone(cs, err)
		err = c.redact(err)
		if gone {
			return tools.Result{}, tools.Errorf(NameServerError, CodeServerExited,
				"the MCP server %q stopped during the call (%v); it is started again on the next call", server, err)
		}
		return tools.Result{}, tools.Errorf(NameServerError, CodeCallFailed, "the MCP server %q refused the call: %v", server, err)
	}
	return c.convert(ctx, res), nil
}

// gone reports whether a failed call's connection has ended, and forgets
// it, so the next call starts the server again.
func (c *conn) gone(cs *sdk.ClientSession, err error) bool {
	if !errors.Is(err, sdk.ErrConnectionClosed) && !strings.Contains(err.Error(), "closed") && !strings.Contains(err.Error(), "EOF") {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cs == cs {
		c.cs, c.state, c.lastErr = nil, StateExited, c.redact(err).Error()
		if c.proc != nil {
			killGroup(c.proc)
			c.proc = nil
		}
		c.set.m.log.Warn("MCP server stopped during a call; it restarts on the next call", "server", c.srv.Name, "session", c.set.sessionID, "err", c.redact(err))
	}
	go func() { _ = cs.Close() }()
	return true
}

// progress shows a server's progress notification as the call's live
// output.
func (c *conn) progress(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
	p := req.Params
	if p == nil {
		return
	}
	token := fmt.Sprint(p.ProgressToken)
	c.pmu.Lock()
	call := c.calls[token]
	c.pmu.Unlock()
	if call == nil {
		return
	}
	line := "progress " + strconv.FormatFloat(p.Progress, 'f', -1, 64)
	if p.Total > 0 {
		line += "/" + strconv.FormatFloat(p.Total, 'f', -1, 64)
	}
	if p.Message != "" {
		line += ": " + p.Message
	}
	call.Output("stdout", line+"\n")
}

// convert turns a server's result into the model's: text as text, embedded
// text resources as text under their URI, and a note for what the model
// cannot take here (images, audio, binary resources, links). Images are
// stored with the session when the manager has an ImageStore, and listed
// in the result's meta, so the transcript shows them.
func (c *conn) convert(ctx context.Context, res *sdk.CallToolResult) tools.Result {
	var blocks []llm.ContentBlock
	var shown tools.MetaImages
	for _, ct := range res.Content {
		switch x := ct.(type) {
		case *sdk.TextContent:
			blocks = append(blocks, llm.Text(x.Text))
		case *sdk.ImageContent:
			note := fmt.Sprintf("[image: %s, %s; not shown to the model]", orUnknown(x.MIMEType), size(x.Data))
			if im, ok := c.storeImage(ctx, x.Data); ok {
				shown.Images = append(shown.Images, im)
				note = fmt.Sprintf("[image: %s, %d x %d, %s; shown to the user in the transcript, not to the model]", im.MediaType, im.Width, im.Height, size(x.Data))
			}
			blocks = append(blocks, llm.Text(note))
		case *sdk.AudioContent:
			blocks = append(blocks, llm.Text(fmt.Sprintf("[audio: %s, %s; not shown to the model]", orUnknown(x.MIMEType), size(x.Data))))
		case *sdk.EmbeddedResource:
			blocks = append(blocks, llm.Text(resourceText(x.Resource)))
		case *sdk.ResourceLink:
			note := "[resource link: " + x.URI
			if x.Name != "" {
				note += " (" + x.Name + ")"
			}
			if x.MIMEType != "" {
				note += ", " + x.MIMEType
			}
			blocks = append(blocks, llm.Text(note+"]"))
		default:
			blocks = append(blocks, llm.Text(fmt.Sprintf("[content of type %T left out]", ct)))
		}
	}
	if len(blocks) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			blocks = append(blocks, llm.Text(string(b)))
		}
	}
	var meta json.RawMessage
	if len(shown.Images) > 0 {
		meta, _ = json.Marshal(shown)
	}
	if !res.IsError {
		return tools.Result{Content: blocks, Meta: meta}
	}
	// The pipeline's own failures read "Error: …"; a server's do too.
	if len(blocks) == 0 {
		blocks = []llm.ContentBlock{llm.Text("Error: the tool failed and said nothing")}
	} else if first := blocks[0].Text; !strings.HasPrefix(first, "Error") {
		blocks[0] = llm.Text("Error: " + first)
	}
	return tools.Result{Content: blocks, IsError: true, Meta: meta}
}

// storeImage keeps an image of a result with the session; false when there
// is no store or it refused the image (not one of the accepted types, too
// large: the note then says it was not shown).
func (c *conn) storeImage(ctx context.Context, data []byte) (tools.MetaImage, bool) {
	st := c.set.m.opts.Images
	if st == nil {
		return tools.MetaImage{}, false
	}
	im, err := st.StoreResultImage(ctx, c.set.sessionID, data)
	if err != nil {
		c.set.m.log.Info("MCP image result not stored", "server", c.srv.Name, "session", c.set.sessionID, "err", err)
		return tools.MetaImage{}, false
	}
	return im, true
}

func resourceText(r *sdk.ResourceContents) string {
	if r == nil {
		return "[empty resource]"
	}
	head := "[resource " + r.URI
	if r.MIMEType != "" {
		head += ", " + r.MIMEType
	}
	if r.Text != "" || len(r.Blob) == 0 {
		return head + "]\n" + r.Text
	}
	return head + ", " + size(r.Blob) + " of binary data; not shown to the model]"
}

func orUnknown(mime string) string {
	if mime == "" {
		return "unknown type"
	}
	return mime
}

// size describes decoded data (JSON decoding already undid the base64).
func size(data []byte) string {
	return strconv.Itoa(len(data)) + " bytes"
}
