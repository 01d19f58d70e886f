package jsonl

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Kind is the type of the JSON value a Cursor is looking at.
type Kind uint8

// The kinds Cursor.Kind reports. KindInvalid means the next byte cannot start
// a value, or the input has ended.
const (
	KindInvalid Kind = iota
	KindNull
	KindBool
	KindNumber
	KindString
	KindArray
	KindObject
)

func (k Kind) String() string {
	switch k {
	case KindNull:
		return "null"
	case KindBool:
		return "boolean"
	case KindNumber:
		return "number"
	case KindString:
		return "string"
	case KindArray:
		return "array"
	case KindObject:
		return "object"
	}
	return "invalid"
}

// SyntaxError says where a record stops being JSON. Truncated is set when the
// input ended in the middle of a value, which is how a line cut short looks;
// unlike encoding/json, that includes ending inside a number or literal.
type SyntaxError struct {
	Offset    int
	Msg       string
	Truncated bool
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%s at byte %d", e.Msg, e.Offset)
}

// maxDepth matches encoding/json's nesting limit, so both agree on what is
// valid.
const maxDepth = 10000

// Cursor is a small pull parser over one JSON record held in memory. Format
// decoders walk the fields they need and skip the rest, and every byte is
// checked on the way, so a record that decodes is valid JSON and a record
// that does not gets a precise SyntaxError.
//
// It exists because decoding WildChat lines through encoding/json is the
// slowest step of ingest: the Cursor copies only the strings a caller asks
// for and never uses reflection. It assumes the input is valid UTF-8 (callers
// check that first); strings are unescaped exactly as encoding/json does.
//
// A Cursor is not safe for concurrent use; it is cheap, so make one per
// record. The zero value is ready after Reset.
type Cursor struct {
	buf   []byte
	pos   int
	depth int
}

// NewCursor returns a Cursor at the start of b.
func NewCursor(b []byte) *Cursor { return &Cursor{buf: b} }

// Reset points c at the start of b.
func (c *Cursor) Reset(b []byte) { *c = Cursor{buf: b} }

// Offset is the byte offset of the next unread byte.
func (c *Cursor) Offset() int { return c.pos }

func (c *Cursor) ws() {
	for c.pos < len(c.buf) {
		switch c.buf[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

func (c *Cursor) eof() error {
	return &SyntaxError{Offset: len(c.buf), Msg: "unexpected end of input", Truncated: true}
}

func (c *Cursor) bad(i int, what string) error {
	if i >= len(c.buf) {
		return c.eof()
	}
	return &SyntaxError{Offset: i, Msg: fmt.Sprintf("invalid character %q %s", c.buf[i], what)}
}

// Kind skips white space and reports the kind of the next value.
func (c *Cursor) Kind() Kind {
	c.ws()
	if c.pos >= len(c.buf) {
		return KindInvalid
	}
	switch b := c.buf[c.pos]; b {
	case '{':
		return KindObject
	case '[':
		return KindArray
	case '"':
		return KindString
	case 't', 'f':
		return KindBool
	case 'n':
		return KindNull
	default:
		if b == '-' || (b >= '0' && b <= '9') {
			return KindNumber
		}
	}
	return KindInvalid
}

// End checks that nothing but white space follows the value just read.
func (c *Cursor) End() error {
	c.ws()
	if c.pos < len(c.buf) {
		return c.bad(c.pos, "after top-level value")
	}
	return nil
}

// Skip reads past the next value, checking it.
func (c *Cursor) Skip() error {
	c.ws()
	if c.pos >= len(c.buf) {
		return c.eof()
	}
	switch b := c.buf[c.pos]; {
	case b == '{':
		return c.Object(func([]byte, int) error { return c.Skip() })
	case b == '[':
		return c.Array(func(int) error { return c.Skip() })
	case b == '"':
		_, _, err := c.scanString()
		return err
	case b == 't':
		return c.literal("true")
	case b == 'f':
		return c.literal("false")
	case b == 'n':
		return c.literal("null")
	case b == '-' || (b >= '0' && b <= '9'):
		return c.number()
	}
	return c.bad(c.pos, "looking for beginning of value")
}

// Raw reads the next value and returns its bytes as they appear in the input
// (a sub-slice of it, not a copy).
func (c *Cursor) Raw() ([]byte, error) {
	c.ws()
	start := c.pos
	if err := c.Skip(); err != nil {
		return nil, err
	}
	return c.buf[start:c.pos], nil
}

// Null reads a null.
func (c *Cursor) Null() error {
	c.ws()
	if c.pos < len(c.buf) && c.buf[c.pos] != 'n' {
		return c.bad(c.pos, "looking for null")
	}
	return c.literal("null")
}

// Bool reads true or false.
func (c *Cursor) Bool() (bool, error) {
	c.ws()
	if c.pos >= len(c.buf) {
		return false, c.eof()
	}
	switch c.buf[c.pos] {
	case 't':
		return true, c.literal("true")
	case 'f':
		return false, c.literal("false")
	}
	return false, c.bad(c.pos, "looking for a boolean")
}

// Str reads a string and returns it unescaped.
func (c *Cursor) Str() (string, error) {
	c.ws()
	if c.pos >= len(c.buf) {
		return "", c.eof()
	}
	if c.buf[c.pos] != '"' {
		return "", c.bad(c.pos, "looking for a string")
	}
	start := c.pos + 1
	escaped, end, err := c.scanString()
	if err != nil {
		return "", err
	}
	if !escaped {
		return string(c.buf[start : end-1]), nil
	}
	return unquoteString(c.buf[start : end-1]), nil
}

// StrBytes reads a string and returns it unescaped. When the string has no
// escapes the result aliases the input, so copy it before keeping it.
func (c *Cursor) StrBytes() ([]byte, error) {
	c.ws()
	if c.pos >= len(c.buf) {
		return nil, c.eof()
	}
	if c.buf[c.pos] != '"' {
		return nil, c.bad(c.pos, "looking for a string")
	}
	start := c.pos + 1
	escaped, end, err := c.scanString()
	if err != nil {
		return nil, err
	}
	s := c.buf[start : end-1]
	if !escaped {
		return s, nil
	}
	return unquote(s), nil
}

// Object reads an object, calling fn once per member with the member's key
// (unescaped; it may alias the input) and the offset of the key's opening
// quote. fn must read the member's value exactly once, with any Cursor
// method; an error from fn stops the walk and is returned.
func (c *Cursor) Object(fn func(key []byte, start int) error) error {
	if empty, err := c.enter('{', '}', "looking for an object"); empty || err != nil {
		return err
	}
	for {
		c.ws()
		if c.pos >= len(c.buf) {
			return c.eof()
		}
		if c.buf[c.pos] != '"' {
			return c.bad(c.pos, "looking for beginning of object key string")
		}
		start := c.pos
		key, err := c.StrBytes()
		if err != nil {
			return err
		}
		c.ws()
		if c.pos >= len(c.buf) {
			return c.eof()
		}
		if c.buf[c.pos] != ':' {
			return c.bad(c.pos, "after object key")
		}
		c.pos++
		if err := fn(key, start); err != nil {
			return err
		}
		if done, err := c.next('}', "after object key:value pair"); done || err != nil {
			return err
		}
	}
}

// Array reads an array, calling fn once per element with its index. fn must
// read the element exactly once.
func (c *Cursor) Array(fn func(i int) error) error {
	if empty, err := c.enter('[', ']', "looking for an array"); empty || err != nil {
		return err
	}
	for i := 0; ; i++ {
		if err := fn(i); err != nil {
			return err
		}
		if done, err := c.next(']', "after array element"); done || err != nil {
			return err
		}
	}
}

// enter steps into the object or array that should start here, with the
// bracket open (what says what was wanted, for the error), and reports
// whether it is empty: then it has stepped out again past end.
func (c *Cursor) enter(open, end byte, what string) (empty bool, err error) {
	c.ws()
	if c.pos >= len(c.buf) {
		return false, c.eof()
	}
	if c.buf[c.pos] != open {
		return false, c.bad(c.pos, what)
	}
	if c.depth++; c.depth > maxDepth {
		return false, &SyntaxError{Offset: c.pos, Msg: "exceeded max depth"}
	}
	c.pos++
	c.ws()
	if c.pos < len(c.buf) && c.buf[c.pos] == end {
		c.pos++
		c.depth--
		return true, nil
	}
	return false, nil
}

// next steps past the comma after a member or element, or past end, the
// closing bracket (done); what names the place for the error.
func (c *Cursor) next(end byte, what string) (done bool, err error) {
	c.ws()
	if c.pos >= len(c.buf) {
		return false, c.eof()
	}
	switch c.buf[c.pos] {
	case ',':
		c.pos++
		return false, nil
	case end:
		c.pos++
		c.depth--
		return true, nil
	}
	return false, c.bad(c.pos, what)
}

func (c *Cursor) literal(lit string) error {
	for k := 0; k < len(lit); k++ {
		i := c.pos + k
		if i >= len(c.buf) {
			return c.eof()
		}
		if c.buf[i] != lit[k] {
			return c.bad(i, "in literal "+lit)
		}
	}
	c.pos += len(lit)
	return nil
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

func (c *Cursor) number() error {
	b, i := c.buf, c.pos
	if i < len(b) && b[i] == '-' {
		i++
	}
	if i >= len(b) {
		return c.eof()
	}
	switch {
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
	default:
		return c.bad(i, "in numeric literal")
	}
	var err error
	if i < len(b) && b[i] == '.' {
		if i, err = c.digits(i+1, "after decimal point in numeric literal"); err != nil {
			return err
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i, err = c.digits(i, "in exponent of numeric literal"); err != nil {
			return err
		}
	}
	c.pos = i
	return nil
}

// digits reads the digits that must start at offset i (what says where, for
// the error) and returns the offset past them.
func (c *Cursor) digits(i int, what string) (int, error) {
	b := c.buf
	if i >= len(b) {
		return i, c.eof()
	}
	if !isDigit(b[i]) {
		return i, c.bad(i, what)
	}
	for i++; i < len(b) && isDigit(b[i]); i++ {
	}
	return i, nil
}

func isHex(b byte) bool {
	return isDigit(b) || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F')
}

// scanString reads past the string starting at c.pos (a quote) and returns
// whether it held escapes and the offset just past its closing quote.
func (c *Cursor) scanString() (escaped bool, end int, err error) {
	b := c.buf
	i := c.pos + 1
	for {
		// Most bytes of a record are plain string bytes: test eight at a
		// time for a quote, a backslash or a control byte, then finish
		// byte by byte.
		for i+8 <= len(b) && !special8(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		for i < len(b) && b[i] >= 0x20 && b[i] != '"' && b[i] != '\\' {
			i++
		}
		if i >= len(b) {
			return false, 0, c.eof()
		}
		switch b[i] {
		case '"':
			c.pos = i + 1
			return escaped, i + 1, nil
		case '\\':
			escaped = true
			i++
			if i >= len(b) {
				return false, 0, c.eof()
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				for k := 1; k <= 4; k++ {
					if i+k >= len(b) {
						return false, 0, c.eof()
					}
					if !isHex(b[i+k]) {
						return false, 0, c.bad(i+k, "in \\u hexadecimal character escape")
					}
				}
				i += 5
			default:
				return false, 0, c.bad(i, "in string escape code")
			}
		default:
			return false, 0, c.bad(i, "in string literal")
		}
	}
}

// hex4 decodes the four hex digits at s (already checked by scanString).
func hex4(s []byte) rune {
	var r rune
	for _, b := range s[:4] {
		switch {
		case b >= '0' && b <= '9':
			b -= '0'
		case b >= 'a' && b <= 'f':
			b = b - 'a' + 10
		default:
			b = b - 'A' + 10
		}
		r = r<<4 | rune(b)
	}
	return r
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// special8 reports whether any of the eight bytes in x is a quote, a
// backslash or below 0x20, with the usual SWAR bit tricks: a byte is zero
// after subtracting one exactly when it borrowed.
func special8(x uint64) bool {
	quote := x ^ (ones * '"')
	slash := x ^ (ones * '\\')
	return ((x-ones*0x20)&^x|(quote-ones)&^quote|(slash-ones)&^slash)&highs != 0
}

// unquote decodes the escapes of a string body that scanString accepted,
// following encoding/json: lone or mismatched surrogates become U+FFFD.
func unquote(s []byte) []byte {
	var sb strings.Builder
	unquoteTo(&sb, s)
	return []byte(sb.String())
}

// unquoteString is unquote for a result kept as a string; the Builder hands
// its buffer over without another copy.
func unquoteString(s []byte) string {
	var sb strings.Builder
	unquoteTo(&sb, s)
	return sb.String()
}

func unquoteTo(sb *strings.Builder, s []byte) {
	sb.Grow(len(s))
	for i := 0; i < len(s); {
		j := bytes.IndexByte(s[i:], '\\')
		if j < 0 {
			sb.Write(s[i:])
			return
		}
		sb.Write(s[i : i+j])
		i += j
		switch s[i+1] {
		case '"', '\\', '/':
			sb.WriteByte(s[i+1])
		case 'b':
			sb.WriteByte('\b')
		case 'f':
			sb.WriteByte('\f')
		case 'n':
			sb.WriteByte('\n')
		case 'r':
			sb.WriteByte('\r')
		case 't':
			sb.WriteByte('\t')
		case 'u':
			r := hex4(s[i+2:])
			i += 6
			if utf16.IsSurrogate(r) {
				if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
					if dec := utf16.DecodeRune(r, hex4(s[i+2:])); dec != utf8.RuneError {
						sb.WriteRune(dec)
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			sb.WriteRune(r)
			continue
		}
		i += 2
	}
}

// Valid reports whether b is exactly one JSON value with optional white space
// around it, with the same verdict as encoding/json's Valid on UTF-8 input.
func Valid(b []byte) bool {
	c := Cursor{buf: b}
	return c.Skip() == nil && c.End() == nil
}

// Check is Valid with the reason: nil, or a *SyntaxError.
func Check(b []byte) error {
	c := Cursor{buf: b}
	if err := c.Skip(); err != nil {
		return err
	}
	return c.End()
}

// AppendCompact appends src to dst with the white space between tokens
// removed, the way encoding/json writes a RawMessage, so a value that was
// pretty-printed over several lines fits on one JSONL line. src must be valid
// JSON; AppendCompact checks it first and returns a *SyntaxError if not.
func AppendCompact(dst, src []byte) ([]byte, error) {
	if err := Check(src); err != nil {
		return dst, err
	}
	for i := 0; i < len(src); {
		switch b := src[i]; b {
		case ' ', '\t', '\n', '\r':
			i++
		case '"':
			j := i + 1
			for src[j] != '"' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			dst = append(dst, src[i:j+1]...)
			i = j + 1
		default:
			dst = append(dst, b)
			i++
		}
	}
	return dst, nil
}
