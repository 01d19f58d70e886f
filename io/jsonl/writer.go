package jsonl

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/ac3/ac3/io/atomicfile"
	"github.com/ac3/ac3/io/compress"
	"github.com/ac3/ac3/pipeline/conv"
)

// Writer writes conversations as canonical JSONL: one JSON object a line,
// the conv.Conversation fields under their json tags, in the same bytes
// encoding/json would produce with HTML escaping off. It is hand-written
// because export speed matters and the struct is fixed. Meta must be valid
// JSON; it is compacted onto the line.
//
// A Writer is not safe for concurrent use.
type Writer struct {
	bw   *bufio.Writer
	buf  []byte
	file *File // set by Create
}

// NewWriter returns a Writer on w. Close flushes it; it does not close w.
func NewWriter(w io.Writer) *Writer {
	return &Writer{bw: bufio.NewWriterSize(w, 256<<10)}
}

// Create starts a JSONL file at path, compressed as its name asks (.zst,
// .gz; see package compress). Lines go to a temporary file that Close
// moves into place once complete and Abort removes, so path never holds a
// partial file.
func Create(path string) (*Writer, error) {
	f, err := CreateFile(path)
	if err != nil {
		return nil, err
	}
	// The file's own buffer serves the Writer: no second copy.
	return &Writer{bw: f.bw, file: f}, nil
}

// Write writes c as one line. It fails if c.Meta is not valid JSON, writing
// nothing in that case.
func (w *Writer) Write(c *conv.Conversation) error {
	b, err := AppendConversation(w.buf[:0], c)
	w.buf = b
	if err != nil {
		return fmt.Errorf("writing conversation %s: %w", c.ID, err)
	}
	w.buf = append(w.buf, '\n')
	_, err = w.bw.Write(w.buf)
	return err
}

// Flush writes buffered lines to the underlying writer.
func (w *Writer) Flush() error { return w.bw.Flush() }

// Close flushes and, for a Writer from Create, finishes the file and moves
// it into place. The Writer is unusable after.
func (w *Writer) Close() error {
	err := w.bw.Flush()
	if w.file == nil {
		return err
	}
	if err != nil {
		return errors.Join(err, w.file.Abort())
	}
	return w.file.Close()
}

// Abort gives up a Writer from Create, removing its temporary file; for a
// Writer on a caller's io.Writer it does nothing. Abort after Close does
// nothing.
func (w *Writer) Abort() error {
	if w.file == nil {
		return nil
	}
	return w.file.Abort()
}

// File is a text output file: bytes written to it are compressed as the
// final name asks and land in a temporary file that Close moves into place
// (see package atomicfile). Exports of rows other than conversations write
// their JSON lines through it.
type File struct {
	bw  *bufio.Writer
	z   io.WriteCloser
	f   *atomicfile.File
	err error
}

// CreateFile starts the file that will become path.
func CreateFile(path string) (*File, error) {
	f, err := atomicfile.Create(path)
	if err != nil {
		return nil, err
	}
	z, err := compress.NewWriter(f, compress.FromName(path))
	if err != nil {
		_ = f.Abort()
		return nil, fmt.Errorf("creating %s: %w", path, err)
	}
	return &File{bw: bufio.NewWriterSize(z, 256<<10), z: z, f: f}, nil
}

// Write buffers p.
func (f *File) Write(p []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	n, err := f.bw.Write(p)
	if err != nil {
		f.err = fmt.Errorf("writing %s: %w", f.f.Path(), err)
	}
	return n, f.err
}

// Close flushes, ends the compressed stream and moves the file into place.
// On error the temporary file is removed.
func (f *File) Close() error {
	err := f.err
	if err == nil {
		err = f.bw.Flush()
	}
	if err == nil {
		err = f.z.Close()
	}
	if err != nil {
		return errors.Join(fmt.Errorf("finishing %s: %w", f.f.Path(), err), f.f.Abort())
	}
	return f.f.Commit()
}

// Abort removes the temporary file. Abort after Close does nothing.
func (f *File) Abort() error {
	_ = f.z.Close()
	return f.f.Abort()
}

// AppendConversation appends the canonical JSON of c (no newline) to dst.
func AppendConversation(dst []byte, c *conv.Conversation) ([]byte, error) {
	start := len(dst)
	dst = append(dst, `{"id":`...)
	dst = AppendString(dst, c.ID)
	dst = append(dst, `,"source":{"file":`...)
	dst = AppendString(dst, c.Source.File)
	if c.Source.Line != 0 {
		dst = append(dst, `,"line":`...)
		dst = strconv.AppendInt(dst, c.Source.Line, 10)
	}
	if c.Source.Row != 0 {
		dst = append(dst, `,"row":`...)
		dst = strconv.AppendInt(dst, c.Source.Row, 10)
	}
	dst = append(dst, `},"format":`...)
	dst = AppendString(dst, c.Format)
	if c.System != "" {
		dst = append(dst, `,"system":`...)
		dst = AppendString(dst, c.System)
	}
	dst = append(dst, `,"messages":`...)
	if c.Messages == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i, m := range c.Messages {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"role":`...)
			dst = AppendString(dst, string(m.Role))
			dst = append(dst, `,"content":`...)
			dst = AppendString(dst, m.Content)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	if c.Language != "" {
		dst = append(dst, `,"language":`...)
		dst = AppendString(dst, c.Language)
	}
	if c.Toxic {
		dst = append(dst, `,"toxic":true`...)
	}
	if c.Redacted {
		dst = append(dst, `,"redacted":true`...)
	}
	if len(c.Meta) > 0 {
		dst = append(dst, `,"meta":`...)
		var err error
		if dst, err = AppendCompact(dst, c.Meta); err != nil {
			return dst[:start], fmt.Errorf("checking meta: %w", err)
		}
	}
	if c.LanguageSource != "" {
		dst = append(dst, `,"language_source":`...)
		dst = AppendString(dst, c.LanguageSource)
	}
	if c.LanguageDetector != "" {
		dst = append(dst, `,"language_detector":`...)
		dst = AppendString(dst, c.LanguageDetector)
	}
	if c.LanguageConfidence != 0 {
		f := c.LanguageConfidence
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return dst[:start], fmt.Errorf("writing conversation %s: language confidence %v is not a JSON number", c.ID, f)
		}
		dst = append(dst, `,"language_confidence":`...)
		dst = appendFloat(dst, f)
	}
	return append(dst, '}'), nil
}

// appendFloat appends f the way encoding/json writes a float64: the
// shortest decimal that reads back the same, in exponent form (with no
// leading zero in a negative exponent) only below 1e-6 or from 1e21 on.
func appendFloat(dst []byte, f float64) []byte {
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string the way encoding/json does with
// HTML escaping off: invalid UTF-8 becomes U+FFFD, and U+2028 and U+2029 are
// escaped so the line is also valid JavaScript.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
