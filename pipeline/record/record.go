// Package record defines what every conversation reader yields: a
// conversation or a quarantined bad record, never both, and the fixed list of
// reasons a record can be quarantined for. Format packages (jsonl, wildchat,
// sharegpt, lic, parquetio, arrowipc, ...) implement Reader; the detect
// package picks one by content and extension.
package record

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/ac3/ac3/pipeline/conv"
)

// Reason says why a record was quarantined. The values are stable: they are
// stored in the ledger and shown by `ac3 status`.
type Reason string

// Quarantine reasons. Readers use the most specific one that applies.
const (
	MalformedJSON       Reason = "malformed_json"           // not valid JSON
	TruncatedLine       Reason = "truncated_line"           // JSON cut short (unexpected end of input)
	InvalidUTF8         Reason = "invalid_utf8"             // bytes that are not UTF-8
	UnknownRole         Reason = "unknown_role"             // a role the format does not define
	NoUserMessage       Reason = "no_user_message"          // nothing a user said
	MissingConversation Reason = "missing_conversation"     // the messages field is absent or null
	PythonReprString    Reason = "python_repr_conversation" // the messages field is a Python repr string
	BadField            Reason = "bad_field"                // a field has the wrong JSON type
	RecordTooLarge      Reason = "record_too_large"         // a line or record past the reader's size cap
)

// Bad is a record that could not become a conversation.
type Bad struct {
	Source  conv.Source
	Reason  Reason
	Detail  string // one line saying what exactly was wrong
	Excerpt string // the start of the raw record, valid UTF-8, at most ExcerptBytes
}

// Record is what a Reader yields: exactly one of Conv and Bad is set.
type Record struct {
	Conv *conv.Conversation
	Bad  *Bad
}

// Reader streams records from one input. Next returns io.EOF after the last
// record. Errors other than io.EOF mean the input as a whole cannot be read
// further (the file vanished, the compression stream is corrupt); a bad record
// is not an error, it is a Record with Bad set. Readers never hold more than a
// bounded window of the input in memory.
type Reader interface {
	Next(ctx context.Context) (Record, error)
	Close() error
}

// ExcerptBytes caps the excerpt kept for a bad record.
const ExcerptBytes = 200

// Excerpt returns the start of raw as valid UTF-8 text of at most ExcerptBytes
// bytes, with invalid bytes replaced, so it can be stored and printed safely.
func Excerpt(raw []byte) string {
	if len(raw) > ExcerptBytes {
		raw = raw[:ExcerptBytes]
		// Drop a rune the cap cut in half, so it does not become U+FFFD.
		for i := len(raw) - 1; i >= 0 && i >= len(raw)-utf8.UTFMax; i-- {
			if utf8.RuneStart(raw[i]) {
				if !utf8.FullRune(raw[i:]) {
					raw = raw[:i]
				}
				break
			}
		}
	}
	s := strings.ToValidUTF8(string(raw), "\uFFFD")
	// Each replacement is three bytes and may have stood for one; cut back
	// to the cap on a rune boundary.
	for len(s) > ExcerptBytes {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return s
}
