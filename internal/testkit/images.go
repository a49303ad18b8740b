package testkit

import (
	"bytes"
	_ "embed"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"testing"
)

// gopherWebP is a 75 x 100 lossless WebP (golang.org/x/image's
// testdata/gopher-doc.1bpp.lossless.webp, BSD license): the standard
// library has no WebP encoder.
//
//go:embed testdata/gopher.webp
var gopherWebP []byte

// WebPSize is the size in pixels of WebP.
const WebPWidth, WebPHeight = 75, 100

// PNG encodes a w x h PNG with a gradient (so sizes differ by content).
func PNG(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(x * 255 / max(1, w)), uint8(y * 255 / max(1, h)), 128, 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// JPEG encodes a w x h JPEG.
func JPEG(t testing.TB, w, h int) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, image.NewRGBA(image.Rect(0, 0, w, h)), nil); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// GIF encodes a w x h GIF.
func GIF(t testing.TB, w, h int) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := gif.Encode(&buf, image.NewPaletted(image.Rect(0, 0, w, h), color.Palette{color.Black, color.White}), nil); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// WebP returns a WebPWidth x WebPHeight WebP.
func WebP() []byte { return bytes.Clone(gopherWebP) }

// PNGHeader is the start of a w x h RGBA PNG: its signature and a valid
// IHDR chunk, no pixels. It sniffs and decodes (image.DecodeConfig) as a
// PNG of that size, as a small file declaring a huge canvas does.
func PNGHeader(w, h uint32) []byte {
	ihdr := binary.BigEndian.AppendUint32(nil, w)
	ihdr = binary.BigEndian.AppendUint32(ihdr, h)
	ihdr = append(ihdr, 8, 6, 0, 0, 0) // 8 bits, RGBA, deflate, no filter, no interlace
	out := []byte("\x89PNG\r\n\x1a\n")
	out = binary.BigEndian.AppendUint32(out, uint32(len(ihdr)))
	chunk := append([]byte("IHDR"), ihdr...)
	out = append(out, chunk...)
	return binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(chunk))
}
