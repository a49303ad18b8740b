package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
	"golang.org/x/net/html/charset"

	"harness/internal/egress"
	"harness/internal/session"
	"harness/internal/tools"
)

// web_fetch errors.
const (
	NameWebFetch = "WebFetchError"

	CodeNetworkOff         = "NETWORK_OFF"
	CodeFetchRefused       = "FETCH_REFUSED"
	CodeFetchFailed        = "FETCH_FAILED"
	CodeFetchTimeout       = "FETCH_TIMEOUT"
	CodeFetchHTTPStatus    = "FETCH_HTTP_STATUS"
	CodeFetchUnsupported   = "FETCH_UNSUPPORTED_CONTENT"
	CodeFetchTooManyRedirs = "FETCH_TOO_MANY_REDIRECTS"
)

// Defaults of web_fetch.
const (
	DefaultFetchTimeout   = 30 * time.Second
	DefaultFetchMaxBytes  = 5 << 20 // body bytes read (after decompression)
	DefaultFetchMaxOutput = 100_000 // characters returned to the model
	defaultFetchRedirects = 5
	fetchErrorExcerpt     = 2_000 // characters of an error page kept
)

// WebFetchOptions configures web_fetch; zero values mean defaults.
type WebFetchOptions struct {
	// Hosts is the admin's allow-list: hosts web_fetch may reach also at
	// loopback, private and link-local addresses (egress.ParseHost's forms).
	// Public addresses need no entry. nil means none.
	Hosts func(ctx context.Context) ([]string, error)
	// Reserved reports addresses web_fetch never reaches, allow-listed or
	// not: the server's own listener and its database.
	Reserved func(netip.AddrPort) bool
	// Resolver looks host names up; nil is net.DefaultResolver.
	Resolver egress.Resolver
	// Timeout bounds a whole fetch, redirects and body included.
	Timeout time.Duration
	// MaxBytes caps the body read; the rest is cut.
	MaxBytes int64
	// MaxOutput caps the characters returned to the model.
	MaxOutput int
}

func (o WebFetchOptions) withDefaults() WebFetchOptions {
	if o.Hosts == nil {
		o.Hosts = func(context.Context) ([]string, error) { return nil, nil }
	}
	if o.Resolver == nil {
		o.Resolver = net.DefaultResolver
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultFetchTimeout
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultFetchMaxBytes
	}
	if o.MaxOutput <= 0 {
		o.MaxOutput = DefaultFetchMaxOutput
	}
	return o
}

type webFetchArgs struct {
	URL    string `json:"url"`
	Format string `json:"format"`
}

// WebFetchMeta is the presentation data of a web_fetch result.
type WebFetchMeta struct {
	URL         string `json:"url"`
	FinalURL    string `json:"finalUrl,omitempty"`
	Status      int    `json:"status"`
	ContentType string `json:"contentType,omitempty"`
	Bytes       int64  `json:"bytes"`
	Truncated   bool   `json:"truncated"`
	DurationMs  int64  `json:"durationMs"`
}

func webFetchTool(opts WebFetchOptions) tools.Definition {
	return tools.Definition{
		Name: ToolWebFetch,
		Description: fmt.Sprintf(`Fetch an http or https URL and return its content: HTML pages converted to markdown (links made absolute), text, JSON and XML as they are. Binary content is refused.

Only works when an admin turned the network on for this session; loopback and private addresses are refused unless the admin allow-listed the host. At most %d bytes are read and %d characters returned (the rest is cut, with a marker); a fetch gives up after %s. Redirects are followed (at most %d). Use format "raw" to get an HTML page's source instead of markdown.`,
			opts.MaxBytes, opts.MaxOutput, opts.Timeout, defaultFetchRedirects),
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "url": {"type": "string", "minLength": 8, "maxLength": 8192, "pattern": "^[hH][tT][tT][pP][sS]?://[^/?#]", "description": "The http or https URL to fetch."},
    "format": {"type": "string", "enum": ["markdown", "raw"], "description": "markdown (default) converts HTML to markdown; raw returns the body as text."}
  },
  "required": ["url"],
  "additionalProperties": false
}`),
		Access:          tools.AccessNetwork,
		ConcurrencySafe: alwaysSafe,
		Execute: func(ctx context.Context, call *tools.Call) (tools.Result, error) {
			args, err := decodeArgs[webFetchArgs](call)
			if err != nil {
				return tools.Result{}, err
			}
			return webFetch(ctx, call, opts, args)
		},
		Preview: previewWebFetch,
	}
}

// previewWebFetch shows the approver the request.
func previewWebFetch(_ context.Context, call *tools.Call) *session.ApprovalPreview {
	var args webFetchArgs
	if json.Unmarshal(call.Args, &args) != nil || args.URL == "" {
		return nil
	}
	return &session.ApprovalPreview{Kind: session.PreviewCommand, Command: "GET " + args.URL,
		Description: "web_fetch reads this URL from the server; what the URL carries (its path and query) leaves with it"}
}

func webFetch(ctx context.Context, call *tools.Call, opts WebFetchOptions, args webFetchArgs) (tools.Result, error) {
	if !call.Env.Network(ctx) {
		return tools.Result{}, tools.Errorf(NameWebFetch, CodeNetworkOff,
			"the network is off for this session, so web_fetch cannot run; an admin can turn it on for the session (or its model route) in Settings")
	}
	u, err := url.Parse(strings.TrimSpace(args.URL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return tools.Result{}, tools.Errorf(tools.NameToolArgs, tools.CodeInvalidArgs, "%q is not an http or https URL", args.URL)
	}
	if u.User != nil {
		return tools.Result{}, tools.Errorf(NameWebFetch, CodeFetchRefused, "URLs with credentials (user:password@) are refused")
	}
	u.Fragment = ""
	entries, err := opts.Hosts(ctx)
	if err != nil {
		return tools.Result{}, fmt.Errorf("read the web fetch allow-list: %w", err)
	}
	g := egress.NewGuard(entries, opts.Reserved, opts.Resolver, opts.Timeout)

	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	tr := &http.Transport{
		Proxy:                  nil, // a proxy would dial for us, past the guard
		DialContext:            g.Dial,
		DisableKeepAlives:      true,
		TLSHandshakeTimeout:    opts.Timeout,
		MaxResponseHeaderBytes: 64 << 10,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) > defaultFetchRedirects {
			return tools.Errorf(NameWebFetch, CodeFetchTooManyRedirs, "stopped after %d redirects (at %s)", defaultFetchRedirects, req.URL.Redacted())
		}
		if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
			return tools.Errorf(NameWebFetch, CodeFetchRefused, "refused a redirect to %s: only http and https are fetched", req.URL.Redacted())
		}
		if req.URL.User != nil {
			return tools.Errorf(NameWebFetch, CodeFetchRefused, "refused a redirect to a URL with credentials")
		}
		return nil
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return tools.Result{}, tools.Errorf(tools.NameToolArgs, tools.CodeInvalidArgs, "%q: %v", args.URL, err)
	}
	req.Header.Set("User-Agent", "Harness-web_fetch/1")
	req.Header.Set("Accept", "text/html, application/xhtml+xml, text/markdown;q=0.9, text/plain;q=0.9, application/json;q=0.8, */*;q=0.5")
	resp, err := client.Do(req)
	if err != nil {
		return tools.Result{}, fetchError(ctx, u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, opts.MaxBytes+1))
	if err != nil {
		return tools.Result{}, fetchError(ctx, u, err)
	}
	cut := int64(len(body)) > opts.MaxBytes
	if cut {
		body = body[:opts.MaxBytes]
	}
	meta := WebFetchMeta{URL: u.String(), Status: resp.StatusCode, Bytes: int64(len(body)), Truncated: cut}
	if final := resp.Request.URL.String(); final != meta.URL {
		meta.FinalURL = final
	}

	text, ctype, err := fetchedText(resp, body, args.Format == "raw")
	meta.ContentType = ctype
	meta.DurationMs = time.Since(start).Milliseconds()
	if err != nil {
		r := tools.ErrorResult(err.Error(), &session.ToolError{Name: NameWebFetch, Code: CodeFetchUnsupported})
		r.Meta = mustJSON(meta)
		return r, nil
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		r := tools.ErrorResult(fmt.Sprintf("HTTP %s from %s\n\n%s", resp.Status, resp.Request.URL.Redacted(), cutText(text, fetchErrorExcerpt, "")),
			&session.ToolError{Name: NameWebFetch, Code: CodeFetchHTTPStatus})
		r.Meta = mustJSON(meta)
		return r, nil
	}

	var sb strings.Builder
	fmt.Fprintf(&sb, "URL: %s\n", meta.URL)
	if meta.FinalURL != "" {
		fmt.Fprintf(&sb, "Redirected to: %s\n", meta.FinalURL)
	}
	fmt.Fprintf(&sb, "Status: %s\nContent-Type: %s\n\n", resp.Status, ctype)
	note := ""
	if cut {
		note = fmt.Sprintf("\n\n[... the body was cut at %d bytes ...]", opts.MaxBytes)
	}
	out := cutText(strings.TrimSpace(text), opts.MaxOutput, "\n\n[... content truncated: %d more characters ...]")
	if out != strings.TrimSpace(text) {
		meta.Truncated = true
	}
	sb.WriteString(out)
	sb.WriteString(note)
	r := tools.TextResult(sb.String())
	r.Meta = mustJSON(meta)
	return r, nil
}

// fetchError turns a failed request into a coded error the model can read.
func fetchError(ctx context.Context, u *url.URL, err error) error {
	var ce *tools.CodedError
	var rf *egress.Refusal
	var ne net.Error
	switch {
	case errors.As(err, &ce):
		return ce
	case errors.As(err, &rf):
		return tools.Errorf(NameWebFetch, CodeFetchRefused, "%s", rf.Error())
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.Is(err, context.DeadlineExceeded),
		errors.As(err, &ne) && ne.Timeout():
		return tools.Errorf(NameWebFetch, CodeFetchTimeout, "fetching %s took too long and was stopped", u.Redacted())
	}
	return tools.Errorf(NameWebFetch, CodeFetchFailed, "fetching %s failed: %v", u.Redacted(), err)
}

// fetchedText decodes the body by its content type: HTML to markdown
// (unless raw), text-like types as text; anything else is refused.
func fetchedText(resp *http.Response, body []byte, raw bool) (text, ctype string, err error) {
	header := resp.Header.Get("Content-Type")
	if header == "" {
		header = http.DetectContentType(body)
	}
	mt, _, perr := mime.ParseMediaType(header)
	if perr != nil {
		mt = strings.ToLower(strings.TrimSpace(strings.Split(header, ";")[0]))
	}
	isHTML := mt == "text/html" || mt == "application/xhtml+xml"
	if !isHTML && !textual(mt) {
		return "", mt, fmt.Errorf("%s is %s content (%d bytes), which web_fetch does not return", resp.Request.URL.Redacted(), mt, len(body))
	}
	r, cerr := charset.NewReader(bytes.NewReader(body), header)
	if cerr == nil {
		if decoded, rerr := io.ReadAll(r); rerr == nil {
			body = decoded
		}
	}
	if !utf8.Valid(body) {
		body = bytes.ToValidUTF8(body, []byte("\uFFFD"))
	}
	if !isHTML || raw {
		return string(body), mt, nil
	}
	md, err := htmlToMarkdown(resp.Request.Context(), body, resp.Request.URL)
	if err != nil {
		return "", mt, fmt.Errorf("converting the HTML of %s to markdown failed: %v", resp.Request.URL.Redacted(), err)
	}
	return md, mt, nil
}

// textual reports whether a media type is text the model can read as is.
func textual(mt string) bool {
	switch {
	case strings.HasPrefix(mt, "text/"),
		strings.HasSuffix(mt, "+json"), strings.HasSuffix(mt, "+xml"):
		return true
	}
	switch mt {
	case "application/json", "application/xml", "application/javascript", "application/x-javascript",
		"application/ecmascript", "application/x-ndjson", "application/yaml", "application/x-yaml", "application/toml":
		return true
	}
	return false
}

// htmlToMarkdown converts a page; relative links are resolved against the
// page's URL (the converter's "domain" is used as a base URL).
func htmlToMarkdown(ctx context.Context, page []byte, pageURL *url.URL) (string, error) {
	conv := converter.NewConverter(converter.WithPlugins(
		base.NewBasePlugin(), commonmark.NewCommonmarkPlugin(), table.NewTablePlugin(),
	))
	out, err := conv.ConvertReader(bytes.NewReader(page), converter.WithContext(ctx), converter.WithDomain(pageURL.String()))
	return string(out), err
}

// cutText keeps the first n characters of s; note (with %d for what was
// left out) marks a cut.
func cutText(s string, n int, note string) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	cut := tools.CutRunes(s, runeOffset(s, n))
	if note == "" {
		return cut + " …"
	}
	return cut + fmt.Sprintf(note, utf8.RuneCountInString(s)-n)
}
