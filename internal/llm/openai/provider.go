package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"

	goai "github.com/sashabaranov/go-openai"

	"harness/internal/llm"
)

// Header names sent with every call.
const (
	HeaderSessionID = "X-Harness-Session-Id"
	HeaderPurpose   = "X-Harness-Purpose"
	userAgent       = "harness/1 (+go-openai)"
)

// Provider is one OpenAI-compatible route. It is safe for concurrent use.
type Provider struct {
	cfg      Config
	info     llm.ProviderInfo
	client   *goai.Client
	endpoint string // base URL + /chat/completions, named in failures
	// variant names the wire dialect of encodeMessage (the kind decides
	// reasoning passback) for the log's wire cache.
	variant string
}

// New validates cfg and builds the route's client.
func New(cfg Config) (*Provider, error) {
	if cfg.Name == "" {
		return nil, errors.New("openai provider: empty name")
	}
	switch cfg.Kind {
	case KindDeepSeek, KindOpenAI:
	case "":
		cfg.Kind = KindOpenAI
	default:
		return nil, fmt.Errorf("openai provider %s: unknown kind %q", cfg.Name, cfg.Kind)
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai provider %s: base URL %q is not an http(s) URL", cfg.Name, cfg.BaseURL)
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if cfg.DefaultModel == "" && len(cfg.Models) > 0 {
		cfg.DefaultModel = cfg.Models[0].ID
	}
	if cfg.DefaultModel == "" {
		return nil, fmt.Errorf("openai provider %s: no default model", cfg.Name)
	}
	if cfg.Label == "" {
		cfg.Label = cfg.Name
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.Retry.IsZero() {
		cfg.Retry = llm.DefaultRetryPolicy()
	}

	hc := http.Client{}
	if cfg.HTTPClient != nil {
		hc = *cfg.HTTPClient // a copy: the caller's client is not modified
	}
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc.Transport = &transport{base: base}

	cc := goai.DefaultConfig(cfg.APIKey)
	cc.BaseURL = cfg.BaseURL
	cc.HTTPClient = &hc
	cc.EmptyMessagesLimit = math.MaxUint32 // comments are filtered; blank lines are framing

	// Image parts are encoded only for routes that take images, so the
	// capability is part of the dialect the log's wire cache keys on.
	variant := "openai-chat/" + string(cfg.Kind)
	if cfg.ImageInput {
		variant += "+images"
	}
	return &Provider{
		cfg: cfg, variant: variant,
		info: llm.ProviderInfo{
			Name: cfg.Name, Label: cfg.Label, Offline: cfg.Offline, ImageInput: cfg.ImageInput,
			DefaultModel: cfg.DefaultModel, Models: cfg.Models, Retry: cfg.Retry,
		},
		client:   goai.NewClientWithConfig(cc),
		endpoint: cfg.BaseURL + "/chat/completions",
	}, nil
}

// Info implements llm.Provider.
func (p *Provider) Info() llm.ProviderInfo { return p.info }

// Stream implements llm.Provider: one HTTP request, chunks emitted in order,
// nil after a finish chunk or a *llm.Failure without one. An error returned
// by emit is returned as is.
func (p *Provider) Stream(ctx context.Context, req llm.Request, emit llm.Emit) error {
	creq, patch, f := p.buildRequest(req)
	if f != nil {
		return f
	}
	if patch.images, f = p.readImages(ctx, req); f != nil {
		return f
	}
	parent := ctx
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	c := &call{patch: patch, header: p.headers(req), dog: newWatchdog(p.cfg.IdleTimeout, func() { cancel(errIdle) })}
	defer c.dog.disarm()

	stream, err := p.client.CreateChatCompletionStream(withCall(ctx, c), creq)
	if err != nil {
		return p.failure(parent, ctx, c, phaseConnect, err)
	}
	defer stream.Close()

	tr := newTranslator(emit)
	for {
		if ctx.Err() != nil {
			return p.failure(parent, ctx, c, phaseStream, ctx.Err())
		}
		raw, err := stream.RecvRaw()
		if err != nil {
			if errors.Is(err, io.EOF) && c.body != nil && c.body.sawDone {
				break
			}
			return p.failure(parent, ctx, c, phaseStream, err)
		}
		var wc wireChunk
		if err := json.Unmarshal(raw, &wc); err != nil {
			return &llm.Failure{Code: llm.CodeMalformedResponse,
				Message: p.redact(fmt.Sprintf("invalid chunk from %s: %v", p.endpoint, err))}
		}
		if err := tr.add(&wc); err != nil {
			return err
		}
	}
	return tr.done()
}

// headers are the per-call request headers.
func (p *Provider) headers(req llm.Request) http.Header {
	h := http.Header{}
	h.Set("User-Agent", userAgent)
	if req.SessionID != "" {
		h.Set(HeaderSessionID, req.SessionID)
	}
	if req.Purpose != llm.PurposeTurn {
		h.Set(HeaderPurpose, string(req.Purpose))
	}
	return h
}
