package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
)

// TokenPrefix starts every API token, so leaked tokens are recognisable
// (secret scanners) and cannot be confused with share or cookie values.
const TokenPrefix = "hrn_"

// secretBytes is the entropy of every token, cookie and link: 256 bits.
const secretBytes = 32

// newSecret returns secretBytes of crypto randomness, base64url without padding.
func newSecret() string {
	b := make([]byte, secretBytes)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b)
}

// hashSecret is the stored form of a secret: hex SHA-256. A plain hash is
// enough because the secrets are 256-bit random, not guessable passwords.
func hashSecret(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// secretLen is the encoded length of newSecret's output.
var secretLen = base64.RawURLEncoding.EncodedLen(secretBytes)

// wellFormed reports whether s could be a secret from newSecret, so junk is
// rejected before any database work.
func wellFormed(s string) bool {
	if len(s) != secretLen {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(s)
	return err == nil
}

// equal compares two strings in constant time.
func equal(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}
