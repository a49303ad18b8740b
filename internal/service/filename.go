package service

import (
	"path"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxNameBytes bounds a stored or served file name (the column's size).
const maxNameBytes = 255

// extensions are the names' extensions each served type may carry; the
// first is the one given to a name without one of them.
var extensions = map[string][]string{
	"image/png":  {".png"},
	"image/jpeg": {".jpg", ".jpeg"},
	"image/gif":  {".gif"},
	"image/webp": {".webp"},
	"text/plain": {".txt"},
}

// IsImageType reports whether mediaType is one of the image types the
// server accepts and browsers may show inline.
func IsImageType(mediaType string) bool {
	_, ok := decoders[mediaType]
	return ok
}

// SafeName is the name a file of mediaType is stored and served under,
// whatever its uploader called it: the last path element only (a
// backslash counts as a separator), without control or format characters
// (bidi overrides, zero-width), leading dots, characters some systems
// refuse in names, or invalid UTF-8, at most maxNameBytes, and with an
// extension that matches the type (".txt" for text, ".bin" for anything
// else), so a download never becomes a page or a program by its name.
// An empty name stays empty: there was none to keep.
func SafeName(name, mediaType string) string {
	name = path.Base(strings.ReplaceAll(strings.ToValidUTF8(name, ""), "\\", "/"))
	name = strings.Map(func(r rune) rune {
		switch {
		case unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Co, r):
			return -1
		case strings.ContainsRune(`/<>:"|?*`, r):
			return '_'
		case unicode.IsSpace(r):
			return ' '
		}
		return r
	}, name)
	name = strings.TrimRight(strings.TrimLeft(name, ". "), " ")
	if name == "" {
		return ""
	}
	want := extensions[mediaType]
	if len(want) == 0 {
		want = []string{".bin"}
	}
	// The name's own extension stays when it is one of the type's (in its
	// case); any other is replaced: "evil.html" of a PNG is "evil.png".
	ext := path.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	if !slices.Contains(want, strings.ToLower(ext)) {
		ext = want[0]
	}
	stem = strings.TrimRight(stem, ". ")
	if stem == "" {
		stem = "file"
	}
	for len(stem)+len(ext) > maxNameBytes {
		_, n := utf8.DecodeLastRuneInString(stem)
		stem = stem[:len(stem)-n]
	}
	return stem + ext
}
