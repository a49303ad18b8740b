package secrets

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// env is a getenv over a map.
func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadKeyCreatesFileThenReusesIt(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data") // not there yet
	k1, src, err := LoadKey(dir, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, FileName)
	if src.Kind != FromNewFile || src.Path != path || src.LooseMode != 0 {
		t.Fatalf("first load source = %+v, want a new file at %s", src, path)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && st.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %#o, want 0600", st.Mode().Perm())
	}
	k2, src, err := LoadKey(dir, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if src.Kind != FromFile || src.Path != path {
		t.Fatalf("second load source = %+v, want the existing file", src)
	}
	if k1 != k2 {
		t.Fatal("second load returned another key")
	}
	// The file is in the form the variable accepts, so it can move there.
	b, _ := os.ReadFile(path)
	k3, src, err := LoadKey(t.TempDir(), env(map[string]string{EnvVar: string(b)}))
	if err != nil || src.Kind != FromEnv || k3 != k1 {
		t.Fatalf("key file content as %s: %v, %+v, same key %v", EnvVar, err, src, k3 == k1)
	}
}

func TestLoadKeyPrefersEnv(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fileKey, _, err := LoadKey(dir, env(nil)) // a key file exists
	if err != nil {
		t.Fatal(err)
	}
	raw := bytes.Repeat([]byte{0xA5}, KeySize)
	want := Key{}
	copy(want.b[:], raw)
	for name, v := range map[string]string{
		"hex":                   hex.EncodeToString(raw),
		"upper hex":             strings.ToUpper(hex.EncodeToString(raw)),
		"base64":                base64.StdEncoding.EncodeToString(raw),
		"base64 without pad":    base64.RawStdEncoding.EncodeToString(raw),
		"base64url":             base64.URLEncoding.EncodeToString(raw),
		"base64url without pad": base64.RawURLEncoding.EncodeToString(raw),
		"with a newline":        base64.StdEncoding.EncodeToString(raw) + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			k, src, err := LoadKey(dir, env(map[string]string{EnvVar: v}))
			if err != nil {
				t.Fatal(err)
			}
			if src.Kind != FromEnv || src.String() != EnvVar {
				t.Fatalf("source %+v, want %s", src, EnvVar)
			}
			if k != want || k == fileKey {
				t.Fatal("the environment's key was not the one returned")
			}
		})
	}
}

func TestLoadKeyRefusesBadEnvWithoutEchoingIt(t *testing.T) {
	t.Parallel()
	for name, v := range map[string]string{
		"short base64":    base64.StdEncoding.EncodeToString([]byte("sixteen byte key")),
		"long base64":     base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("k"), 48)),
		"63 hex":          strings.Repeat("ab", 31) + "a",
		"64 non-hex":      strings.Repeat("zq", 32),
		"a passphrase":    "correct horse battery staple but not a key",
		"only spaces":     "   ",
		"hex with spaces": strings.Repeat("ab ", 32),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			_, _, err := LoadKey(dir, env(map[string]string{EnvVar: v}))
			if err == nil {
				t.Fatal("a bad key was accepted")
			}
			msg := err.Error()
			if !strings.Contains(msg, EnvVar) {
				t.Fatalf("error %q does not name %s", msg, EnvVar)
			}
			if s := strings.TrimSpace(v); len(s) > 3 && strings.Contains(msg, s) {
				t.Fatalf("error %q echoes the value", msg)
			}
			if _, err := os.Stat(filepath.Join(dir, FileName)); !os.IsNotExist(err) {
				t.Fatal("a bad variable fell back to creating a key file")
			}
		})
	}
}

func TestLoadKeyRefusesCorruptFile(t *testing.T) {
	t.Parallel()
	good := NewKey().text()
	for name, content := range map[string]string{
		"empty":     "",
		"truncated": good[:20],
		"16 bytes":  base64.StdEncoding.EncodeToString([]byte("sixteen byte key")),
		"two keys":  good + "\n" + good + "\n",
		"huge":      strings.Repeat("A", 4096),
		"binary":    string(bytes.Repeat([]byte{0, 1, 2, 0xff}, 8)),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, FileName)
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, _, err := LoadKey(dir, env(nil))
			if err == nil {
				t.Fatal("a corrupt key file was accepted")
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "corrupt") {
				t.Fatalf("error %q does not say the file %s is corrupt", err, path)
			}
			if len(content) > 8 && strings.Contains(err.Error(), content[:8]) {
				t.Fatalf("error %q quotes the file", err)
			}
			if b, _ := os.ReadFile(path); string(b) != content {
				t.Fatal("the corrupt file was replaced; its owner may still restore it")
			}
		})
	}
	t.Run("a directory", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, FileName), 0o700); err != nil {
			t.Fatal(err)
		}
		if _, _, err := LoadKey(dir, env(nil)); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("LoadKey over a directory: %v", err)
		}
	})
}

func TestLoadKeyTightensLooseFile(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no group/other permission bits on Windows")
	}
	t.Parallel()
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604, 0o660} {
		t.Run(fmt.Sprintf("%#o", mode), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			want, _, err := LoadKey(dir, env(nil))
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, FileName)
			if err := os.Chmod(path, mode); err != nil {
				t.Fatal(err)
			}
			got, src, err := LoadKey(dir, env(nil))
			if err != nil {
				t.Fatal(err)
			}
			if got != want || src.LooseMode != mode {
				t.Fatalf("same key %v, LooseMode %#o, want %#o", got == want, src.LooseMode, mode)
			}
			st, _ := os.Stat(path)
			if st.Mode().Perm() != 0o600 {
				t.Fatalf("mode after load %#o, want 0600", st.Mode().Perm())
			}
			if _, src, _ := LoadKey(dir, env(nil)); src.LooseMode != 0 {
				t.Fatalf("a 0600 file reported loose: %#o", src.LooseMode)
			}
		})
	}
}

func TestKeyNeverPrints(t *testing.T) {
	t.Parallel()
	raw := bytes.Repeat([]byte{0x5c}, KeySize)
	var k Key
	copy(k.b[:], raw)
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("key", "k", k)
	out := fmt.Sprint(k) + fmt.Sprintf("%v %+v %#v %x %X %s %q", k, k, k, k, k, k, k) + logs.String()
	for _, leak := range []string{hex.EncodeToString(raw), "5c5c", "5C5C", base64.StdEncoding.EncodeToString(raw)[:8], "92 92"} {
		if strings.Contains(out, leak) {
			t.Fatalf("key bytes printed: %s", out)
		}
	}
}
