// Package llm is the model vocabulary shared by the session log, the driver and
// the provider adapters: messages with ids, roles and sources; content blocks;
// stream chunks; token usage; structured failures. It is the bottom floor of
// Harness and imports nothing from the project.
package llm
