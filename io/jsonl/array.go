package jsonl

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// ArrayReader streams the elements of one top-level JSON array, the shape
// ShareGPT and Lost-in-Conversation files are published in, without loading
// the array. Each element comes back as a Chunk whose Line is the line its
// first byte is on, so a quarantined element can be found with an editor.
//
// The reader only tracks strings and bracket depth to find where an element
// ends; checking the element itself is the decoder's job. A file that ends
// inside an element yields that partial element (which then fails to decode
// as truncated); a file that ends between elements yields one empty,
// Unterminated chunk. Junk between elements, where a comma belongs, cannot be
// resynchronised and is returned as an error.
type ArrayReader struct {
	br    *bufio.Reader
	max   int
	line  int64
	state int
	buf   []byte
}

const (
	arrStart = iota // before the opening [
	arrFirst        // after [, before the first element or ]
	arrNext         // after an element, before , or ]
	arrDone
)

// NewArrayReader returns an ArrayReader over r; elements longer than
// maxBytes (DefaultMaxLineBytes if <= 0) come back TooLarge.
func NewArrayReader(r io.Reader, maxBytes int) *ArrayReader {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxLineBytes
	}
	return &ArrayReader{br: bufio.NewReaderSize(r, readBufSize), max: maxBytes, line: 1}
}

// Line reports the line the reader has reached.
func (a *ArrayReader) Line() int64 { return a.line }

// peek skips white space (and a leading byte order mark) and returns the next
// byte without consuming it.
func (a *ArrayReader) peek() (byte, error) {
	for {
		b, err := a.br.ReadByte()
		if err != nil {
			return 0, err
		}
		switch b {
		case '\n':
			a.line++
		case ' ', '\t', '\r':
		case 0xef:
			if a.state == arrStart {
				if bom, _ := a.br.Peek(2); string(bom) == "\xbb\xbf" {
					a.br.Discard(2)
					continue
				}
			}
			fallthrough
		default:
			return b, a.br.UnreadByte()
		}
	}
}

func (a *ArrayReader) syntax(msg string, b byte) error {
	return fmt.Errorf("line %d: %s, found %q", a.line, msg, b)
}

// Next returns the next element, or io.EOF after the closing ].
func (a *ArrayReader) Next() (Chunk, error) {
	for {
		b, err := a.peek()
		if err == io.EOF {
			if a.state == arrDone {
				return Chunk{}, io.EOF
			}
			if a.state == arrStart {
				a.state = arrDone
				return Chunk{}, io.EOF
			}
			a.state = arrDone
			return Chunk{Line: a.line, Unterminated: true}, nil
		}
		if err != nil {
			return Chunk{}, err
		}
		switch a.state {
		case arrStart:
			if b != '[' {
				return Chunk{}, a.syntax("expected [ to start a JSON array", b)
			}
			a.br.Discard(1)
			a.state = arrFirst
			continue
		case arrFirst:
			if b == ']' {
				a.br.Discard(1)
				a.state = arrDone
				continue
			}
		case arrNext:
			switch b {
			case ',':
				a.br.Discard(1)
				if b, err := a.peek(); err == nil && b == ']' {
					return Chunk{}, a.syntax("expected an element after ,", b)
				}
				a.state = arrFirst
				continue
			case ']':
				a.br.Discard(1)
				a.state = arrDone
				continue
			}
			return Chunk{}, a.syntax("expected , or ] after array element", b)
		case arrDone:
			return Chunk{}, a.syntax("unexpected data after the closing ]", b)
		}
		a.state = arrNext
		return a.element(b)
	}
}

// element reads one value that starts with b.
func (a *ArrayReader) element(first byte) (Chunk, error) {
	start := a.line
	a.buf = a.buf[:0]
	var size int64
	tooLarge := false
	depth, inStr, esc := 0, false, false
	scalar := first != '{' && first != '[' && first != '"'
	for {
		if _, err := a.br.Peek(1); err != nil {
			if err == io.EOF {
				// Cut short inside the element: hand back what there is.
				a.state = arrDone
				return a.chunk(start, size, tooLarge, true), nil
			}
			return Chunk{}, err
		}
		data, _ := a.br.Peek(a.br.Buffered())
		n, done := 0, false
	scan:
		for i, c := range data {
			if c == '\n' {
				a.line++
			}
			switch {
			case scalar:
				if c == ',' || c == ']' || c == ' ' || c == '\t' || c == '\r' || c == '\n' {
					if c == '\n' {
						a.line-- // peek counts it again
					}
					n, done = i, true
					break scan
				}
			case inStr:
				switch {
				case esc:
					esc = false
				case c == '\\':
					esc = true
				case c == '"':
					inStr = false
					if depth == 0 {
						n, done = i+1, true
						break scan
					}
				}
			default:
				switch c {
				case '"':
					inStr = true
				case '{', '[':
					depth++
				case '}', ']':
					depth--
					if depth == 0 {
						n, done = i+1, true
						break scan
					}
				}
			}
		}
		if !done {
			n = len(data)
		}
		size += int64(n)
		if !tooLarge {
			if len(a.buf)+n > a.max {
				tooLarge = true
				if room := keepTooLarge - len(a.buf); room > 0 {
					a.buf = append(a.buf, data[:min(room, n)]...)
				}
			} else {
				a.buf = append(a.buf, data[:n]...)
			}
		}
		if _, err := a.br.Discard(n); err != nil {
			return Chunk{}, errors.Join(errors.New("discarding scanned bytes"), err)
		}
		if done {
			return a.chunk(start, size, tooLarge, false), nil
		}
	}
}

func (a *ArrayReader) chunk(line, size int64, tooLarge, unterminated bool) Chunk {
	b := a.buf
	if cap(a.buf) > 4*readBufSize {
		a.buf = nil
	}
	return Chunk{Line: line, Bytes: b, TooLarge: tooLarge, Size: size, Unterminated: unterminated}
}
