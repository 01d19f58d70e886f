package compress

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Kind is the compression an input carries.
type Kind string

// The compressions Sniff can report. Only None, Zstd and Gzip can be read.
const (
	None  Kind = ""
	Zstd  Kind = "zstd"
	Gzip  Kind = "gzip"
	Bzip2 Kind = "bzip2"
	XZ    Kind = "xz"
)

// ErrUnsupported is returned for compressions that are recognised but not
// read (bzip2, xz), so the user gets a hint instead of a JSON error.
var ErrUnsupported = errors.New("unsupported compression")

// bufSize is the read buffer in front of the decompressor. Large reads keep
// the zstd block decoder fed; the inputs are often hundreds of megabytes.
const bufSize = 256 << 10

// maxWindow lets us read frames written with `zstd --long=31`, whose 2 GiB
// window is above the library's 512 MiB default. Memory is only used when a
// frame asks for it.
const maxWindow = 1 << 31

// Sniff reports the compression whose magic number starts head. Four bytes
// are enough; fewer give None unless they already rule things in.
func Sniff(head []byte) Kind {
	switch {
	case len(head) >= 4 && bytes.Equal(head[:4], []byte{0x28, 0xb5, 0x2f, 0xfd}):
		return Zstd
	case len(head) >= 4 && binary.LittleEndian.Uint32(head)&0xfffffff0 == 0x184d2a50:
		// A skippable frame: pzstd and seekable zstd start with one.
		return Zstd
	case len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b:
		return Gzip
	case len(head) >= 3 && string(head[:3]) == "BZh":
		return Bzip2
	case len(head) >= 6 && bytes.Equal(head[:6], []byte{0xfd, '7', 'z', 'X', 'Z', 0}):
		return XZ
	}
	return None
}

// Open opens path and returns its decompressed contents. Closing the result
// closes the file.
func Open(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	rc, err := Wrap(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	return &closers{ReadCloser: rc, under: f}, nil
}

// Wrap returns the decompressed contents of r, sniffing its first bytes. It
// does not close r; closing the result releases the decoder only.
func Wrap(r io.Reader) (io.ReadCloser, error) {
	br := bufio.NewReaderSize(r, bufSize)
	head, err := br.Peek(6)
	if err != nil && err != io.EOF && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, fmt.Errorf("reading header: %w", err)
	}
	switch k := Sniff(head); k {
	case Zstd:
		// Concurrency 0 means GOMAXPROCS: blocks are decoded ahead in
		// parallel, which is most of the cost of reading a .zst input.
		d, err := zstd.NewReader(br,
			zstd.WithDecoderConcurrency(0),
			zstd.WithDecoderMaxWindow(maxWindow),
		)
		if err != nil {
			return nil, fmt.Errorf("starting zstd decoder: %w", err)
		}
		return &zstdReader{dec: d}, nil
	case Gzip:
		z, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("reading gzip header: %w", err)
		}
		return z, nil
	case Bzip2, XZ:
		return nil, fmt.Errorf("%w: %s (decompress it first)", ErrUnsupported, k)
	}
	return io.NopCloser(br), nil
}

// extensions maps each compression suffix a file name may carry to its
// compression. Readers use it to see past the suffix to the format's own
// extension; writers use it to choose what to compress with.
var extensions = []struct {
	ext  string
	kind Kind
}{
	{".zst", Zstd},
	{".zstd", Zstd},
	{".gz", Gzip},
	{".gzip", Gzip},
}

// FromName returns the compression that name's last extension asks for
// (any case), None when it has no compression suffix.
func FromName(name string) Kind {
	ext := strings.ToLower(filepath.Ext(name))
	for _, e := range extensions {
		if e.ext == ext {
			return e.kind
		}
	}
	return None
}

// Strip removes a trailing compression suffix (.zst, .zstd, .gz, .gzip)
// from name, so callers can look at the inner extension: "chats.jsonl.zst"
// gives "chats.jsonl".
func Strip(name string) string {
	if FromName(name) == None {
		return name
	}
	return name[:len(name)-len(filepath.Ext(name))]
}

// InnerExt returns the lower-case extension of name once compression
// suffixes are stripped: "a.JSONL.gz" gives ".jsonl".
func InnerExt(name string) string {
	return strings.ToLower(filepath.Ext(Strip(name)))
}

// NewWriter returns a writer that compresses into w with k; for None it
// writes through. Closing it ends the compressed stream but does not close
// w. Bzip2 and XZ cannot be written.
func NewWriter(w io.Writer, k Kind) (io.WriteCloser, error) {
	switch k {
	case None:
		return nopWriteCloser{w}, nil
	case Zstd:
		z, err := zstd.NewWriter(w)
		if err != nil {
			return nil, fmt.Errorf("starting zstd encoder: %w", err)
		}
		return z, nil
	case Gzip:
		return gzip.NewWriter(w), nil
	}
	return nil, fmt.Errorf("%w: %s cannot be written", ErrUnsupported, k)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

type zstdReader struct {
	dec *zstd.Decoder
}

func (z *zstdReader) Read(p []byte) (int, error) { return z.dec.Read(p) }

func (z *zstdReader) Close() error {
	// Close stops the decoder's goroutines; it has no error to report.
	z.dec.Close()
	return nil
}

// closers closes the decompressor, then the file under it.
type closers struct {
	io.ReadCloser
	under io.Closer
}

func (c *closers) Close() error {
	return errors.Join(c.ReadCloser.Close(), c.under.Close())
}
