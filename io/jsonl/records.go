package jsonl

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/record"
)

// DecodeFunc turns one raw JSON record into a conversation or a quarantined
// record. Format packages provide one (wildchat.Decode, sharegpt.Decode, ...).
// It must not keep raw after returning, and must be safe to call from several
// goroutines at once.
type DecodeFunc func(raw []byte, src conv.Source) record.Record

// Option changes how a reader splits its input.
type Option func(*options)

type options struct {
	maxBytes int
}

// WithMaxLineBytes caps one line or array element; longer ones are
// quarantined as record.RecordTooLarge. n <= 0 means DefaultMaxLineBytes.
func WithMaxLineBytes(n int) Option {
	return func(o *options) { o.maxBytes = n }
}

// ChunkReader yields the raw records of a text input: the lines of a JSONL
// file, or the elements of a file holding one JSON array. Which of the two is
// decided by the first non-blank byte ('[' means an array).
type ChunkReader struct {
	next  func() (Chunk, error)
	line  func() int64
	Array bool // set once the first Next has looked at the input
}

// NewChunkReader returns a ChunkReader over r. It reads nothing until Next.
func NewChunkReader(r io.Reader, opts ...Option) *ChunkReader {
	var o options
	for _, f := range opts {
		f(&o)
	}
	cr := &ChunkReader{}
	cr.next = func() (Chunk, error) {
		br := bufio.NewReaderSize(r, readBufSize)
		if isArray(br) {
			a := NewArrayReader(br, o.maxBytes)
			cr.next, cr.line, cr.Array = a.Next, a.Line, true
		} else {
			l := NewLineReader(br, o.maxBytes)
			cr.next, cr.line = l.Next, l.Line
		}
		return cr.next()
	}
	cr.line = func() int64 { return 0 }
	return cr
}

// Next returns the next chunk, or io.EOF. Chunk.Bytes is only valid until the
// following call; copy it to keep it (for example to decode it on another
// goroutine).
func (cr *ChunkReader) Next() (Chunk, error) { return cr.next() }

// Line reports the line the reader has reached, for error messages.
func (cr *ChunkReader) Line() int64 { return cr.line() }

// isArray peeks at the start of the input (as much as the buffer holds)
// and applies IsArray to it.
func isArray(br *bufio.Reader) bool {
	head, _ := br.Peek(br.Size()) // short at the end of the input; IsArray copes
	return IsArray(head)
}

// sniffLines is how many lines after the first IsArray looks at.
const sniffLines = 16

// IsArray reports whether head, the start of a text input, begins one JSON
// array of records rather than JSON Lines. An input whose first non-blank
// byte (after a byte order mark) is not '[' is JSON Lines. One that starts
// with '[' is an array, unless its first line is broken and the lines after
// it are the records: then it is JSON Lines with a bad first line, which is
// quarantined like any other bad line instead of making the whole file
// unreadable. That is decided on the complete lines among the next
// sniffLines: JSON Lines if more of them are whole JSON objects than not.
// The lines of an array's elements end in commas, or open an element that
// goes on over the next lines, so an array has at most one such line (its
// last element's, followed by the closing bracket's).
func IsArray(head []byte) bool {
	head = bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	head = bytes.TrimLeft(head, " \t\r\n")
	if len(head) == 0 || head[0] != '[' {
		return false
	}
	first, rest, ok := bytes.Cut(head, []byte("\n"))
	if !ok || len(bytes.TrimSpace(first)) == 1 {
		// A single line, or a bare "[" line as pretty-printers write.
		return true
	}
	var objects, others int
	for n := 0; n < sniffLines && len(rest) > 0; {
		var line []byte
		line, rest, ok = bytes.Cut(rest, []byte("\n"))
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		n++
		switch {
		case line[0] == '{' && json.Valid(line):
			objects++
		case !ok:
			// The last line in head may be cut short by the window.
		default:
			others++
		}
	}
	return objects <= others
}

// DecodeChunk turns a chunk into a record: over-size and cut-off chunks are
// quarantined here, the rest go through decode.
func DecodeChunk(ch Chunk, file string, decode DecodeFunc) record.Record {
	src := conv.Source{File: file, Line: ch.Line}
	switch {
	case ch.TooLarge:
		return record.Record{Bad: &record.Bad{
			Source:  src,
			Reason:  record.RecordTooLarge,
			Detail:  fmt.Sprintf("record is %d bytes, over the size cap", ch.Size),
			Excerpt: record.Excerpt(ch.Bytes),
		}}
	case ch.Unterminated && len(ch.Bytes) == 0:
		return record.Record{Bad: &record.Bad{
			Source: src,
			Reason: record.TruncatedLine,
			Detail: "input ends inside the JSON array (no closing ])",
		}}
	}
	return decode(ch.Bytes, src)
}

// RecordReader is a record.Reader over a text input in one format: it splits
// the input with a ChunkReader and decodes each chunk with a DecodeFunc.
type RecordReader struct {
	name   string
	decode DecodeFunc
	chunks *ChunkReader
}

// NewRecordReader returns a reader of the records in r; name goes into each
// record's Source.File. Closing it does not close r.
func NewRecordReader(r io.Reader, name string, decode DecodeFunc, opts ...Option) *RecordReader {
	return &RecordReader{name: name, decode: decode, chunks: NewChunkReader(r, opts...)}
}

// Next returns the next record, io.EOF at the end, ctx's error if it is
// done, or an error when the input itself cannot be read any further.
func (rr *RecordReader) Next(ctx context.Context) (record.Record, error) {
	if err := ctx.Err(); err != nil {
		return record.Record{}, err
	}
	ch, err := rr.chunks.Next()
	if err == io.EOF {
		return record.Record{}, io.EOF
	}
	if err != nil {
		return record.Record{}, fmt.Errorf("reading %s near line %d: %w", rr.name, rr.chunks.Line(), err)
	}
	return DecodeChunk(ch, rr.name, rr.decode), nil
}

// Close releases nothing the caller gave it: the caller closes r.
func (rr *RecordReader) Close() error { return nil }
