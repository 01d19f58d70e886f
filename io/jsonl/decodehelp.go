package jsonl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/record"
)

// Problem is the first thing a decoder found wrong with a record that is
// still valid JSON. Decoders keep walking after one so that a syntax error
// further on, the more specific verdict, still wins.
type Problem struct {
	Reason record.Reason
	Detail string
}

// Note records p unless a problem is already recorded.
func Note(p **Problem, reason record.Reason, format string, args ...any) {
	if *p == nil {
		*p = &Problem{Reason: reason, Detail: fmt.Sprintf(format, args...)}
	}
}

// Quarantine builds a Bad record for raw.
func Quarantine(raw []byte, src conv.Source, reason record.Reason, detail string) record.Record {
	return record.Record{Bad: &record.Bad{Source: src, Reason: reason, Detail: detail, Excerpt: record.Excerpt(raw)}}
}

// SyntaxBad quarantines raw for a Cursor error: TruncatedLine when the JSON
// stops in the middle, MalformedJSON otherwise.
func SyntaxBad(raw []byte, src conv.Source, err error) record.Record {
	var se *SyntaxError
	if errors.As(err, &se) && se.Truncated {
		return Quarantine(raw, src, record.TruncatedLine, "JSON ends in the middle of a value (line cut short?)")
	}
	return Quarantine(raw, src, record.MalformedJSON, "not valid JSON: "+err.Error())
}

// CheckUTF8 quarantines raw if it is not valid UTF-8; JSON text must be, and
// letting bad bytes through would put U+FFFD into training data unnoticed.
func CheckUTF8(raw []byte, src conv.Source) (record.Record, bool) {
	if utf8.Valid(raw) {
		return record.Record{}, true
	}
	i := 0
	for i < len(raw) {
		r, n := utf8.DecodeRune(raw[i:])
		if r == utf8.RuneError && n == 1 {
			break
		}
		i += n
	}
	return Quarantine(raw, src, record.InvalidUTF8, fmt.Sprintf("byte %d (0x%02x) is not valid UTF-8", i, raw[i])), false
}

// NotObject quarantines a record that is valid JSON but not an object, or
// reports the syntax error if it is not valid JSON either.
func NotObject(raw []byte, src conv.Source, c *Cursor) record.Record {
	k := c.Kind()
	if err := Check(raw); err != nil {
		return SyntaxBad(raw, src, err)
	}
	return Quarantine(raw, src, record.BadField, fmt.Sprintf("record is a JSON %s, not an object", k))
}

// Finish gives the verdict on a record whose walk ended with err, in order
// of precedence: a syntax error (err, or anything after the value), then
// the first problem noted, then a field that was absent or null (present
// false). ok reports that none applies; then the format's own checks
// follow.
func Finish(raw []byte, src conv.Source, c *Cursor, err error, prob *Problem, field string, present bool) (bad record.Record, ok bool) {
	if err == nil {
		err = c.End()
	}
	if err != nil {
		return SyntaxBad(raw, src, err), false
	}
	if prob != nil {
		return Quarantine(raw, src, prob.Reason, prob.Detail), false
	}
	if !present {
		return Quarantine(raw, src, record.MissingConversation, "no "+field+" field (or it is null)"), false
	}
	return record.Record{}, true
}

// SetSystem gives d the system prompt from a record's own system field. If
// the messages began with a system message as well, that one stays, as the
// first message, rather than either being dropped.
func SetSystem(d *conv.Conversation, system string) {
	if system == "" {
		return
	}
	if d.System != "" {
		d.Messages = append([]conv.Message{{Role: conv.System, Content: d.System}}, d.Messages...)
	}
	d.System = system
}

// MessagesString classifies a messages field that came as a string: a
// Python repr of a list of dicts (a common result of str() on a pandas
// column) is PythonReprString; anything else is BadField.
func MessagesString(field, s string) (record.Reason, string) {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "[") || strings.HasPrefix(t, "{") {
		for _, k := range []string{"'role'", "'content'", "'from'", "'value'"} {
			if strings.Contains(t, k) {
				return record.PythonReprString, field + " is a string holding a Python repr, not a JSON array"
			}
		}
		if json.Valid([]byte(t)) {
			return record.BadField, field + " is a string holding JSON; it was encoded twice"
		}
	}
	return record.BadField, field + " is a string, not an array"
}

// Members collects top-level members of a record, by their byte spans, to
// rebuild the record without some of its fields (the messages) as Meta,
// byte for byte and in order.
type Members struct {
	spans [][2]int
	size  int
	arr   [24][2]int
}

// Add keeps the member that occupies raw[start:end].
func (m *Members) Add(start, end int) {
	if m.spans == nil {
		m.spans = m.arr[:0]
	}
	m.spans = append(m.spans, [2]int{start, end})
	m.size += end - start + 1
}

// Object returns the kept members of raw as a new JSON object, or nil when
// none were kept.
func (m *Members) Object(raw []byte) json.RawMessage {
	if len(m.spans) == 0 {
		return nil
	}
	out := make([]byte, 0, m.size+1)
	out = append(out, '{')
	for i, s := range m.spans {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, raw[s[0]:s[1]]...)
	}
	return append(out, '}')
}

// ContentID is the id given to a record that has none: "sha-" and the
// conversation's content hash, the same whichever file it came from.
func ContentID(c *conv.Conversation) string { return "sha-" + c.ContentHash() }

// Number returns the digits of a JSON number as an id, without the
// formatting encoding/json would add.
func Number(raw []byte) string { return string(bytes.TrimSpace(raw)) }

// Clip shortens s for an error detail.
func Clip(s string) string {
	if len(s) <= 40 {
		return s
	}
	n := 40
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."

}

// ID reads an identifier: a string, a number (older dumps), or null.
func ID(c *Cursor, field string, prob **Problem) (string, error) {
	if c.Kind() == KindNumber {
		raw, err := c.Raw()
		return Number(raw), err
	}
	return OptString(c, field, prob)
}

// OptString reads a string or null (as ""); another type notes BadField.
func OptString(c *Cursor, field string, prob **Problem) (string, error) {
	switch k := c.Kind(); k {
	case KindString:
		return c.Str()
	case KindNull:
		return "", c.Null()
	default:
		Note(prob, record.BadField, "%s is a %s, not a string", field, k)
		return "", c.Skip()
	}
}

// OptBool reads a boolean or null (as false); another type notes BadField.
func OptBool(c *Cursor, field string, prob **Problem) (bool, error) {
	switch k := c.Kind(); k {
	case KindBool:
		return c.Bool()
	case KindNull:
		return false, c.Null()
	default:
		Note(prob, record.BadField, "%s is a %s, not a boolean", field, k)
		return false, c.Skip()
	}
}

// CheckRecord reports how r breaks the record.Reader contract, or nil: it
// must hold exactly one of Conv and Bad; a Bad needs a known reason and an
// excerpt that is valid UTF-8 and at most record.ExcerptBytes; a Conv needs
// an id, a format and at least one user message. Reader tests and fuzzers of
// every format use it.
func CheckRecord(r record.Record) error {
	switch {
	case (r.Conv == nil) == (r.Bad == nil):
		return fmt.Errorf("record has Conv=%v and Bad=%v; want exactly one", r.Conv != nil, r.Bad != nil)
	case r.Bad != nil:
		b := r.Bad
		switch b.Reason {
		case record.MalformedJSON, record.TruncatedLine, record.InvalidUTF8, record.UnknownRole,
			record.NoUserMessage, record.MissingConversation, record.PythonReprString,
			record.BadField, record.RecordTooLarge:
		default:
			return fmt.Errorf("bad record has unknown reason %q", b.Reason)
		}
		if !utf8.ValidString(b.Excerpt) || len(b.Excerpt) > record.ExcerptBytes {
			return fmt.Errorf("bad excerpt: %d bytes, valid UTF-8 %v", len(b.Excerpt), utf8.ValidString(b.Excerpt))
		}
		if !utf8.ValidString(b.Detail) || b.Detail == "" {
			return fmt.Errorf("bad detail %q", b.Detail)
		}
	default:
		c := r.Conv
		if c.ID == "" || c.Format == "" {
			return fmt.Errorf("conversation without id or format: %q %q", c.ID, c.Format)
		}
		if c.UserTurns() == 0 {
			return fmt.Errorf("conversation %s has no user message", c.ID)
		}
		if len(c.Meta) > 0 && !json.Valid(c.Meta) {
			return fmt.Errorf("conversation %s has invalid meta %q", c.ID, c.Meta)
		}
	}
	return nil
}
