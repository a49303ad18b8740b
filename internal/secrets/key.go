package secrets

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
)

const (
	// EnvVar holds the key (base64 or hex of KeySize bytes). When set it
	// wins over the key file; every replica sharing a PostgreSQL database
	// needs the same value.
	EnvVar = "HARNESS_SECRET_KEY"
	// FileName is the key file in the data directory, created at first
	// start when EnvVar is unset.
	FileName = "secret.key"
	// KeySize is the key length in bytes (AES-256).
	KeySize = 32

	// maxKeyFile bounds what LoadKey reads: a key file is one short line.
	maxKeyFile = 1024
)

// Key is an AES-256 key. It prints as a redacted placeholder under fmt and
// slog, so a Key that reaches a log line or an error by mistake shows
// nothing.
type Key struct{ b [KeySize]byte }

// NewKey returns a random key.
func NewKey() Key {
	var k Key
	_, _ = rand.Read(k.b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return k
}

// ParseKey decodes a key given as base64 (standard or URL alphabet, padded
// or not) or as hex, surrounding space ignored. Errors never quote s.
func ParseKey(s string) (Key, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Key{}, errors.New("empty key")
	}
	var k Key
	if len(s) == hex.EncodedLen(KeySize) {
		if n, err := hex.Decode(k.b[:], []byte(s)); err == nil && n == KeySize {
			return k, nil
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		b, err := enc.DecodeString(s)
		if err != nil {
			continue
		}
		if len(b) != KeySize {
			return Key{}, fmt.Errorf("base64 of %d bytes, want %d bytes (e.g. openssl rand -base64 %d)", len(b), KeySize, KeySize)
		}
		copy(k.b[:], b)
		return k, nil
	}
	return Key{}, fmt.Errorf("a value of %d characters that is neither base64 of %d bytes nor %d hex characters (e.g. openssl rand -base64 %d)",
		len(s), KeySize, hex.EncodedLen(KeySize), KeySize)
}

// String is a placeholder: a key is never printed.
func (Key) String() string { return "secrets.Key(redacted)" }

// Format keeps every fmt verb (%x and %#v included) away from the bytes.
func (k Key) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, k.String()) }

// LogValue keeps slog away from the bytes.
func (k Key) LogValue() slog.Value { return slog.StringValue(k.String()) }

// text is the key file's form, also accepted by EnvVar, so a key file can
// be moved into the environment as is.
func (k Key) text() string { return base64.StdEncoding.EncodeToString(k.b[:]) }

// SourceKind says where LoadKey found the key.
type SourceKind string

const (
	FromEnv     SourceKind = "env"      // EnvVar
	FromFile    SourceKind = "file"     // an existing key file
	FromNewFile SourceKind = "new file" // a key file created by this call
)

// Source describes where the key came from, for a log line. It never holds
// key material.
type Source struct {
	Kind SourceKind
	Path string // the key file (FromFile, FromNewFile)
	// LooseMode is the key file's former permission bits when group or
	// others had any (LoadKey has set them to 0600), zero otherwise. The
	// caller should warn: the key may have been read by someone else.
	LooseMode fs.FileMode
}

func (s Source) String() string {
	switch s.Kind {
	case FromEnv:
		return EnvVar
	case FromNewFile:
		return "new key file " + s.Path
	default:
		return "key file " + s.Path
	}
}

// LoadKey returns the key from EnvVar (read through getenv; nil means
// os.Getenv) or else from <dataDir>/secret.key, which it creates with a
// random key and mode 0600 when absent. A present key file must hold
// exactly one key, and loses any group or other permission bits (reported
// in Source.LooseMode). The key is never part of an error.
func LoadKey(dataDir string, getenv func(string) string) (Key, Source, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if v := getenv(EnvVar); v != "" {
		k, err := ParseKey(v)
		if err != nil {
			return Key{}, Source{}, fmt.Errorf("secret key: %s is not a key: %w", EnvVar, err)
		}
		return k, Source{Kind: FromEnv}, nil
	}
	if dataDir == "" {
		return Key{}, Source{}, fmt.Errorf("secret key: %s is unset and there is no data directory for %s", EnvVar, FileName)
	}
	path := filepath.Join(dataDir, FileName)
	k, loose, err := readKeyFile(path)
	if err == nil {
		return k, Source{Kind: FromFile, Path: path, LooseMode: loose}, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return Key{}, Source{}, err
	}
	k, err = createKeyFile(path)
	if errors.Is(err, fs.ErrExist) {
		// Another process created it since the read: use that one.
		k, loose, err = readKeyFile(path)
		return k, Source{Kind: FromFile, Path: path, LooseMode: loose}, err
	}
	if err != nil {
		return Key{}, Source{}, err
	}
	return k, Source{Kind: FromNewFile, Path: path}, nil
}

// readKeyFile reads and checks an existing key file, first taking group
// and other permission bits away (returned when there were any).
func readKeyFile(path string) (_ Key, loose fs.FileMode, _ error) {
	f, err := os.Open(path)
	if err != nil {
		return Key{}, 0, fmt.Errorf("secret key file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Key{}, 0, fmt.Errorf("secret key file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return Key{}, 0, fmt.Errorf("secret key file %s: not a regular file", path)
	}
	// Windows has no such bits: its Perm is always 0666 or 0444.
	if perm := st.Mode().Perm(); perm&0o077 != 0 && runtime.GOOS != "windows" {
		if err := f.Chmod(0o600); err != nil {
			return Key{}, 0, fmt.Errorf("secret key file %s has mode %#o and cannot be restricted to its owner: %w", path, perm, err)
		}
		loose = perm
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return Key{}, loose, fmt.Errorf("secret key file: read %s: %w", path, err)
	}
	if len(b) > maxKeyFile {
		return Key{}, loose, fmt.Errorf("secret key file %s is corrupt: larger than a key (%d bytes or more); restore it from a backup", path, len(b))
	}
	k, err := ParseKey(string(b))
	if err != nil {
		return Key{}, loose, fmt.Errorf("secret key file %s is corrupt: %w; restore it from a backup (or set %s), or delete it to start a new key and re-enter every stored API key", path, err, EnvVar)
	}
	return k, loose, nil
}

// createKeyFile writes a new random key to path, which must not exist
// (O_EXCL), with mode 0600 from the start, and makes it durable before
// anything is sealed with it.
func createKeyFile(path string) (Key, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return Key{}, fmt.Errorf("secret key file: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return Key{}, fmt.Errorf("secret key file: create: %w", err)
	}
	k := NewKey()
	_, err = f.WriteString(k.text() + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		_ = os.Remove(path) // never leave a torn key file behind
		return Key{}, fmt.Errorf("secret key file: write %s: %w", path, err)
	}
	return k, nil
}

// syncDir makes a new directory entry durable, so a crash cannot lose a
// key file that already sealed values.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil // directories cannot be synced there; NTFS journals names
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return err // EINVAL: a file system without directory sync
	}
	return nil
}

// Derive returns a 32-byte subkey of k for one purpose (HMAC-SHA256 of the
// purpose under k), so the key that seals route API keys is never used
// as is for anything else.
func (k Key) Derive(purpose string) []byte {
	m := hmac.New(sha256.New, k.b[:])
	m.Write([]byte(purpose))
	return m.Sum(nil)
}
