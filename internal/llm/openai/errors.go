package openai

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	goai "github.com/sashabaranov/go-openai"

	"harness/internal/llm"
)

// errIdle is the cancel cause set by the idle watchdog.
var errIdle = errors.New("idle timeout")

// Classifier patterns (upstream §5.3): context overflow and quota wording
// over the provider's code, type and message.
var (
	contextOverflowRE = regexp.MustCompile(`(?i)context[ _-]?(length|window)[^.]*?(exceed|overflow)|maximum context length|too long for (the )?(model|context)|input exceeds the model'?s context|context_length_exceeded`)
	quotaRE           = regexp.MustCompile(`(?i)insufficient[ _](quota|balance|credits?|funds)|quota[ _]exceeded|exceeded your (current )?quota|out of credits|credit balance is too low`)
	bearerRE          = regexp.MustCompile(`(?i)bearer\s+[A-Za-z0-9._~+/=-]+|\bsk-[A-Za-z0-9_-]{8,}`)
)

// phase says where a call failed, for errors that do not say it themselves.
type phase int

const (
	phaseConnect phase = iota // before the response headers
	phaseStream               // while reading the event stream
)

// failure classifies err from a call (upstream §5.4 Errors). parent is the
// caller's context, ctx the call's own (cancelled by the watchdog).
func (p *Provider) failure(parent, ctx context.Context, c *call, ph phase, err error) *llm.Failure {
	f := p.classify(parent, ctx, c, ph, err)
	if c.respHeader != nil && f.RequestID == "" {
		f.RequestID = firstHeader(c.respHeader, "x-request-id", "x-deepseek-request-id")
	}
	f.Message = p.redact(f.Message)
	return f
}

func (p *Provider) classify(parent, ctx context.Context, c *call, ph phase, err error) *llm.Failure {
	if parent.Err() != nil {
		return llm.Errorf(llm.CodeAborted, "request cancelled")
	}
	if errors.Is(context.Cause(ctx), errIdle) {
		return llm.Errorf(llm.CodeTimeout, "no data from %s for %s", p.endpoint, p.cfg.IdleTimeout)
	}
	var apiErr *goai.APIError
	if errors.As(err, &apiErr) {
		if apiErr.HTTPStatusCode > 0 {
			return classifyHTTP(apiErr.HTTPStatusCode, c.respStatus, apiErr.Message, apiDetail(apiErr), c.respHeader)
		}
		return classifyStreamError(apiErr)
	}
	var reqErr *goai.RequestError
	if errors.As(err, &reqErr) {
		// The body is not a JSON error: use it only to recognise wording.
		return classifyHTTP(reqErr.HTTPStatusCode, reqErr.HTTPStatus, "", string(reqErr.Body), c.respHeader)
	}
	if !c.reached {
		return llm.Errorf(llm.CodeInvalidRequest, "request rejected before sending: %v", err)
	}
	if ph == phaseConnect {
		return llm.Errorf(llm.CodeTransport, "cannot reach %s: %v", p.endpoint, unwrapURL(err))
	}
	switch {
	case errors.Is(err, io.EOF) && c.body != nil && c.body.n == 0:
		return llm.Errorf(llm.CodeEmptyResponse, "%s returned an empty response body", p.endpoint)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return llm.Errorf(llm.CodeStreamClosed, "stream from %s ended without [DONE]", p.endpoint)
	case errors.Is(err, goai.ErrTooManyEmptyStreamMessages):
		return llm.Errorf(llm.CodeMalformedResponse, "stream from %s sent too many non-data lines", p.endpoint)
	default:
		return llm.Errorf(llm.CodeTransport, "reading stream from %s: %v", p.endpoint, unwrapURL(err))
	}
}

// classifyHTTP maps an HTTP error response. message is the provider's
// error.message (may be empty); detail is extra text for the classifiers.
func classifyHTTP(status int, statusLine, message, detail string, header http.Header) *llm.Failure {
	f := &llm.Failure{Status: status, Message: message}
	if f.Message == "" {
		if statusLine == "" {
			statusLine = strconv.Itoa(status) + " " + http.StatusText(status)
		}
		f.Message = "HTTP " + strings.TrimSpace(statusLine)
	}
	wording := message + " " + detail
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		f.Code = llm.CodeAuth
	case status == http.StatusRequestEntityTooLarge:
		f.Code = llm.CodeInvalidRequest
	case status == http.StatusPaymentRequired || quotaRE.MatchString(wording):
		f.Code = llm.CodeQuota
	case status == http.StatusTooManyRequests:
		f.Code = llm.CodeRateLimit
	case status == http.StatusBadRequest && contextOverflowRE.MatchString(wording):
		f.Code = llm.CodeContextWindowExceeded
	case status == http.StatusBadRequest:
		f.Code = llm.CodeInvalidRequest
	case status >= 500:
		f.Code = llm.CodeServer
	default:
		f.Code = llm.Code("HTTP_" + strconv.Itoa(status))
	}
	if header != nil {
		f.RetryAfterMs = retryAfterMs(header, time.Now())
	}
	return f
}

// classifyStreamError maps an error object sent inside the event stream.
func classifyStreamError(e *goai.APIError) *llm.Failure {
	wording := e.Message + " " + apiDetail(e)
	code := llm.CodeServer
	switch {
	case quotaRE.MatchString(wording):
		code = llm.CodeQuota
	case contextOverflowRE.MatchString(wording):
		code = llm.CodeContextWindowExceeded
	case strings.Contains(strings.ToLower(wording), "rate limit") || strings.Contains(strings.ToLower(wording), "rate_limit"):
		code = llm.CodeRateLimit
	}
	msg := e.Message
	if msg == "" {
		msg = "provider reported an error in the stream"
	}
	return &llm.Failure{Code: code, Message: msg}
}

func apiDetail(e *goai.APIError) string {
	return fmt.Sprintf("%v %s", e.Code, e.Type)
}

// retryAfterMs reads retry-after-ms, else Retry-After as seconds or an HTTP
// date; only positive values count.
func retryAfterMs(h http.Header, now time.Time) int64 {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return int64(ms)
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs > 0 {
			return int64(secs * 1000)
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d.Milliseconds()
		}
	}
	return 0
}

// redact removes the API key and anything shaped like a bearer token.
func (p *Provider) redact(s string) string {
	if k := p.cfg.APIKey; len(k) >= 6 {
		s = strings.ReplaceAll(s, k, "[redacted]")
	}
	return bearerRE.ReplaceAllString(s, "[redacted]")
}

// unwrapURL drops url.Error's "Post <url>:" prefix; messages name the
// endpoint themselves.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func firstHeader(h http.Header, names ...string) string {
	for _, n := range names {
		if v := h.Get(n); v != "" {
			return v
		}
	}
	return ""
}
