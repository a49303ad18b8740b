package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// ErrCannotOpen is wrapped by every Open failure: a wrong key, a value
// altered or moved to another context, or text that is not a sealed value.
var ErrCannotOpen = errors.New("cannot open sealed value")

// prefixV1 starts every value Seal returns.
const prefixV1 = "enc:v1:"

// Sealer seals and opens short secrets with one key. It is safe for
// concurrent use.
type Sealer struct{ aead cipher.AEAD }

// NewSealer builds a sealer over k (AES-256-GCM, 12-byte random nonces).
func NewSealer(k Key) (*Sealer, error) {
	if k == (Key{}) {
		return nil, errors.New("secrets: refusing the all-zero key (an unset Key)")
	}
	block, err := aes.NewCipher(k.b[:])
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	return &Sealer{aead: aead}, nil
}

// Seal encrypts plaintext bound to context (which must be given again to
// Open) and returns "enc:v1:" + base64url(nonce|ciphertext|tag). Sealing
// the same text twice gives different values.
func (s *Sealer) Seal(plaintext, context string) (string, error) {
	ns := s.aead.NonceSize()
	buf := make([]byte, ns, ns+len(plaintext)+s.aead.Overhead())
	if _, err := rand.Read(buf); err != nil {
		return "", fmt.Errorf("seal: nonce: %w", err)
	}
	buf = s.aead.Seal(buf, buf[:ns], []byte(plaintext), []byte(context))
	return prefixV1 + base64.RawURLEncoding.EncodeToString(buf), nil
}

// Open returns the plaintext of a value Seal returned for the same context
// under the same key. Anything else fails with an error wrapping
// ErrCannotOpen; the error never quotes the value.
func (s *Sealer) Open(sealed, context string) (string, error) {
	if !IsSealed(sealed) {
		return "", fmt.Errorf("%w: not a sealed value", ErrCannotOpen)
	}
	body, ok := strings.CutPrefix(sealed, prefixV1)
	if !ok {
		version, _, _ := strings.Cut(strings.TrimPrefix(sealed, "enc:"), ":")
		return "", fmt.Errorf("%w: unknown format %s (sealed by a newer Harness?)", ErrCannotOpen, version)
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil {
		return "", fmt.Errorf("%w: damaged value (not base64url)", ErrCannotOpen)
	}
	ns := s.aead.NonceSize()
	if len(raw) < ns+s.aead.Overhead() {
		return "", fmt.Errorf("%w: damaged value (too short)", ErrCannotOpen)
	}
	pt, err := s.aead.Open(nil, raw[:ns], raw[ns:], []byte(context))
	if err != nil {
		return "", fmt.Errorf("%w: wrong key, or the value was altered or belongs to another record", ErrCannotOpen)
	}
	return string(pt), nil
}

// IsSealed reports whether s has the form of a sealed value ("enc:v<n>:",
// any version), so migrations leave sealed values alone and plain text
// is told apart.
func IsSealed(s string) bool {
	rest, ok := strings.CutPrefix(s, "enc:v")
	if !ok {
		return false
	}
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	return i > 0 && i < len(rest) && rest[i] == ':'
}
