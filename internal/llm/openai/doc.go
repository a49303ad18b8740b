// Package openai is the model adapter for OpenAI-compatible chat completion
// endpoints: DeepSeek (the default route, with its thinking switch, reasoning
// passback and cache-hit usage) and any OpenAI-compatible server such as
// OpenAI, vLLM or Ollama. It uses github.com/sashabaranov/go-openai as the
// client, with a narrow http.RoundTripper for the wire details go-openai
// cannot express (see transport.go).
//
// A Provider makes exactly one HTTP request per Stream call, translates the
// server-sent events into llm chunks (upstream §5.4) and classifies every
// failure into a stable llm.Code without ever putting the API key in a
// message. Retries are the caller's job (llm.RetryPolicy).
package openai
