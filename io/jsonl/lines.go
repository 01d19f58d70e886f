package jsonl

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// DefaultMaxLineBytes caps one line (or one element of a JSON array). Real
// WildChat lines reach a few megabytes; 64 MiB leaves room without letting a
// file with no newlines take all memory.
const DefaultMaxLineBytes = 64 << 20

// keepTooLarge is how much of an over-size line is kept for its excerpt.
const keepTooLarge = 1 << 10

// readBufSize is the bufio size in front of the decompressor.
const readBufSize = 1 << 20

// Chunk is one record's raw bytes as a reader found them.
type Chunk struct {
	// Line is the 1-based line the record starts on.
	Line int64
	// Bytes is the record, valid until the next call to Next. For a
	// TooLarge chunk it is only the first kilobyte.
	Bytes []byte
	// TooLarge is set when the record was longer than the cap; Size then
	// says how long it was and the record is skipped.
	TooLarge bool
	Size     int64
	// Unterminated is set on a final line with no newline after it, a
	// hint that the file may have been cut short.
	Unterminated bool
}

// LineReader splits a stream into lines, numbering them from 1. It skips
// blank lines (they still count), drops a trailing \r and a leading UTF-8
// byte order mark, and hands back a final line that lacks its newline. It
// holds at most one line in memory.
type LineReader struct {
	br   *bufio.Reader
	max  int
	line int64
	buf  []byte
	done bool
}

// NewLineReader returns a LineReader over r that treats lines longer than
// maxBytes (DefaultMaxLineBytes if <= 0) as too large.
func NewLineReader(r io.Reader, maxBytes int) *LineReader {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxLineBytes
	}
	return &LineReader{br: bufio.NewReaderSize(r, readBufSize), max: maxBytes}
}

// Line reports the number of the last line read.
func (l *LineReader) Line() int64 { return l.line }

// Next returns the next non-blank line. It returns io.EOF at the end, and any
// other error from the underlying reader as is.
func (l *LineReader) Next() (Chunk, error) {
	for !l.done {
		ch, err := l.read()
		if err != nil {
			return Chunk{}, err
		}
		if ch.TooLarge || !blank(ch.Bytes) {
			return ch, nil
		}
	}
	return Chunk{}, io.EOF
}

// read returns the next line, blank or not.
func (l *LineReader) read() (Chunk, error) {
	l.buf = l.buf[:0]
	var size int64
	tooLarge := false
	for {
		frag, err := l.br.ReadSlice('\n')
		size += int64(len(frag))
		if !tooLarge {
			if len(l.buf)+len(frag) > l.max+2 { // +2 for the line ending
				tooLarge = true
				room := keepTooLarge - len(l.buf)
				if room > 0 {
					l.buf = append(l.buf, frag[:min(room, len(frag))]...)
				}
			} else if err == nil && len(l.buf) == 0 {
				// The common case: the whole line sits in the bufio
				// buffer, so hand it out without copying.
				return l.finish(frag, size, false, false), nil
			} else {
				l.buf = append(l.buf, frag...)
			}
		}
		switch {
		case err == nil:
			return l.finish(l.buf, size, tooLarge, false), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF:
			l.done = true
			if size == 0 {
				return Chunk{}, io.EOF
			}
			return l.finish(l.buf, size, tooLarge, true), nil
		default:
			return Chunk{}, err
		}
	}
}

func (l *LineReader) finish(b []byte, size int64, tooLarge, unterminated bool) Chunk {
	l.line++
	if tooLarge {
		if !unterminated {
			size-- // the newline
		}
	} else {
		b = bytes.TrimSuffix(b, []byte{'\n'})
		b = bytes.TrimSuffix(b, []byte{'\r'})
		size = int64(len(b))
		if size > int64(l.max) {
			// The cap applies to the line without its ending.
			tooLarge = true
			b = b[:min(len(b), keepTooLarge)]
		}
	}
	if l.line == 1 && bytes.HasPrefix(b, []byte("\xef\xbb\xbf")) {
		b = b[3:]
		size -= 3
	}
	if cap(l.buf) > 4*readBufSize {
		// Do not keep a huge buffer alive after one huge line; b still
		// holds it until the caller is done.
		l.buf = nil
	}
	return Chunk{Line: l.line, Bytes: b, TooLarge: tooLarge, Size: size, Unterminated: unterminated}
}

func blank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return false
		}
	}
	return true
}
