package secrets

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

func newSealer(t *testing.T) *Sealer {
	t.Helper()
	s, err := NewSealer(NewKey())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSealOpenRoundTrip(t *testing.T) {
	t.Parallel()
	s := newSealer(t)
	for _, pt := range []string{"sk-live-0123456789abcdef", "", "ü∂ – non-ASCII", strings.Repeat("x", 512)} {
		sealed, err := s.Seal(pt, "provider:work")
		if err != nil {
			t.Fatal(err)
		}
		if !IsSealed(sealed) || !strings.HasPrefix(sealed, "enc:v1:") {
			t.Fatalf("sealed form %q", sealed)
		}
		if pt != "" && strings.Contains(sealed, pt) {
			t.Fatal("the plaintext shows in the sealed value")
		}
		got, err := s.Open(sealed, "provider:work")
		if err != nil || got != pt {
			t.Fatalf("Open = %q, %v; want %q", got, err, pt)
		}
	}
}

func TestSealTwiceDiffers(t *testing.T) {
	t.Parallel()
	s := newSealer(t)
	a, _ := s.Seal("sk-same", "provider:x")
	b, _ := s.Seal("sk-same", "provider:x")
	if a == b {
		t.Fatal("two seals of the same text are equal: the nonce is not fresh")
	}
}

func TestOpenFailures(t *testing.T) {
	t.Parallel()
	s := newSealer(t)
	const pt, ctx = "sk-live-secret-value", "provider:work"
	sealed, err := s.Seal(pt, ctx)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(sealed, prefixV1))
	flip := func(i int) string {
		b := append([]byte(nil), raw...)
		b[i] ^= 1
		return prefixV1 + base64.RawURLEncoding.EncodeToString(b)
	}
	tests := []struct {
		name    string
		sealer  *Sealer
		value   string
		context string
	}{
		{"wrong key", newSealer(t), sealed, ctx},
		{"other context (row swap)", s, sealed, "provider:other"},
		{"empty context", s, sealed, ""},
		{"nonce altered", s, flip(0), ctx},
		{"ciphertext altered", s, flip(len(raw) / 2), ctx},
		{"tag altered", s, flip(len(raw) - 1), ctx},
		{"truncated", s, sealed[:len(sealed)-4], ctx},
		{"too short", s, prefixV1 + "AAAA", ctx},
		{"not base64", s, prefixV1 + "!!!!" + sealed[len(prefixV1)+4:], ctx},
		{"plain text", s, pt, ctx},
		{"unknown version", s, "enc:v9:" + strings.TrimPrefix(sealed, prefixV1), ctx},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.sealer.Open(tt.value, tt.context)
			if !errors.Is(err, ErrCannotOpen) {
				t.Fatalf("Open = %q, %v; want ErrCannotOpen", got, err)
			}
			if got != "" {
				t.Fatalf("a failed Open returned %q", got)
			}
			if strings.Contains(err.Error(), pt) || len(tt.value) > 12 && strings.Contains(err.Error(), tt.value[7:]) {
				t.Fatalf("error %q quotes the value", err)
			}
		})
	}
}

func TestIsSealed(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"enc:v1:AAAA": true,
		"enc:v12:x":   true,
		"enc:v1:":     true,
		"enc:v:x":     false,
		"enc:vx:x":    false,
		"enc:v1":      false,
		"sk-enc:v1:x": false,
		"":            false,
		"sk-live-123": false,
	} {
		if got := IsSealed(s); got != want {
			t.Errorf("IsSealed(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestNewSealerRefusesZeroKey(t *testing.T) {
	t.Parallel()
	if _, err := NewSealer(Key{}); err == nil {
		t.Fatal("the zero key was accepted")
	}
}
