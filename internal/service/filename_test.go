package service_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"harness/internal/service"
)

func TestSafeName(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 200) + ".png" // 404 bytes
	tests := []struct {
		name, mediaType, want string
	}{
		{"shot.png", "image/png", "shot.png"},
		{"../../evil.html", "image/png", "evil.png"},
		{`..\..\evil.html`, "image/png", "evil.png"},
		{"/etc/passwd", "text/plain", "passwd.txt"},
		{"..", "image/png", ""},
		{".", "image/png", ""},
		{"", "image/png", ""},
		{"dir/", "image/png", "dir.png"},
		{".htaccess", "image/png", "htaccess.png"},
		{"...hidden.gif", "image/gif", "hidden.gif"},
		{".png", "image/png", "png.png"},
		{"Photo.JPG", "image/jpeg", "Photo.JPG"},
		{"photo.jpeg", "image/jpeg", "photo.jpeg"},
		{"photo.jpg", "image/png", "photo.png"},
		{"archive.tar.gz", "image/webp", "archive.tar.webp"},
		{"noext", "image/gif", "noext.gif"},
		{"café – ünïcödé 写真.png", "image/png", "café – ünïcödé 写真.png"},
		{"a\x00b\x1fc\x7f.png", "image/png", "abc.png"},
		{"evil\u202Egnp.exe", "image/png", "evilgnp.png"},     // a bidi override
		{"zero\u200bwidth.png", "image/png", "zerowidth.png"}, // a zero-width space
		{"bad\xff\xfeutf8.png", "image/png", "badutf8.png"},
		{"tab\tand\nnewline.png", "image/png", "tabandnewline.png"},
		{`we<ird>:"|?*.png`, "image/png", "we_ird______.png"},
		{"  spaced  .png", "image/png", "spaced.png"},
		{"trailing. . .png", "image/png", "trailing.png"},
		{"page.html", "text/html", "page.bin"},
		{"tool.exe", "application/octet-stream", "tool.bin"},
		{"notes.TXT", "text/plain", "notes.TXT"},
		{"\x00\x01", "image/png", ""},
		{"...", "image/png", ""},
		{". .png", "image/png", "png.png"},
	}
	for _, tt := range tests {
		if got := service.SafeName(tt.name, tt.mediaType); got != tt.want {
			t.Errorf("SafeName(%q, %s) = %q, want %q", tt.name, tt.mediaType, got, tt.want)
		}
	}
	got := service.SafeName(long, "image/png")
	if len(got) > 255 || !utf8.ValidString(got) || !strings.HasSuffix(got, "é.png") {
		t.Errorf("a long name: %d bytes, %q", len(got), got)
	}
}
