package jsonl

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"github.com/ac3/ac3/io/record"
	"github.com/ac3/ac3/pipeline/conv"
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

// isArray peeks past white space and a byte order mark for a '['.
func isArray(br *bufio.Reader) bool {
	for n := 1; ; n++ {
		head, err := br.Peek(n)
		if len(head) < n || err != nil {
			return false
		}
		switch b := head[n-1]; {
		case b == ' ' || b == '\t' || b == '\r' || b == '\n':
		case n <= 3 && string(head) == "\xef\xbb\xbf"[:n]:
		default:
			return b == '['
		}
		if n >= 4096 {
			return false
		}
	}
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
