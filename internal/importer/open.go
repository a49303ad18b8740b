package importer

import (
	"archive/zip"
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// Container formats DeepSeek Harness stores logs in besides plain JSON
// lines.
var (
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
	zipMagic  = []byte("PK\x03\x04")
)

// open returns the JSON lines of r: r itself, or, when r is a
// zstd-compressed log (DeepSeek Harness's session.jsonl.zstd: one zstd
// frame per written batch), its decompressed stream, or, when r is a ZIP
// archive (DeepSeek Harness's session export), the one session log at its
// root (plain or zstd). Line numbers in errors count decompressed lines.
// done releases what open holds.
func open(r io.Reader, maxBytes int64) (io.Reader, func(), error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(4)
	switch {
	case bytes.Equal(head, zstdMagic):
		d, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(maxBytes)+1<<20))
		if err != nil {
			return nil, nil, &Error{Code: CodeRead, Reason: "zstd: " + err.Error(), Err: err}
		}
		return d, d.Close, nil
	case bytes.Equal(head, zipMagic):
		return openZip(br, maxBytes)
	}
	return br, func() {}, nil
}

// openZip finds the session log at the root of a ZIP archive: the one
// entry without a directory named *.jsonl, *.jsonl.zst or *.jsonl.zstd
// (descendants under subagents/ and media/ are not imported).
// The archive is spooled to a temporary file, not memory: reading a ZIP
// needs random access, and a capped archive in memory would be 64 MiB per
// import.
func openZip(r io.Reader, maxBytes int64) (_ io.Reader, _ func(), err error) {
	f, err := os.CreateTemp("", "harness-import-*.zip")
	if err != nil {
		return nil, nil, &Error{Code: CodeRead, Reason: "spool the archive: " + err.Error(), Err: err}
	}
	drop := func() { f.Close(); os.Remove(f.Name()) }
	defer func() {
		if err != nil {
			drop()
		}
	}()
	n, err := io.Copy(f, io.LimitReader(r, maxBytes+1))
	if err != nil {
		return nil, nil, &Error{Code: CodeRead, Reason: "read: " + err.Error(), Err: err}
	}
	if n > maxBytes {
		return nil, nil, &Error{Code: CodeTooLarge, Reason: "the archive is larger than the import cap of " + sizeString(maxBytes)}
	}
	zr, err := zip.NewReader(f, n)
	if err != nil {
		return nil, nil, &Error{Code: CodeUnsupported, Reason: "ZIP archive: " + err.Error(), Err: err}
	}
	var logs []*zip.File
	for _, f := range zr.File {
		name := f.Name
		if path.Dir(name) != "." {
			continue
		}
		if strings.HasSuffix(name, ".jsonl") || strings.HasSuffix(name, ".jsonl.zst") || strings.HasSuffix(name, ".jsonl.zstd") {
			logs = append(logs, f)
		}
	}
	if len(logs) != 1 {
		return nil, nil, &Error{Code: CodeUnsupported, Reason: fmt.Sprintf("ZIP archive: want one session log (*.jsonl) at its root, found %d", len(logs))}
	}
	rc, err := logs[0].Open()
	if err != nil {
		return nil, nil, &Error{Code: CodeUnsupported, Reason: "ZIP archive: " + err.Error(), Err: err}
	}
	inner, done, err := open(rc, maxBytes)
	if err != nil {
		rc.Close()
		return nil, nil, err
	}
	return inner, func() { done(); rc.Close(); drop() }, nil
}
