package conv

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// Role is who wrote a message.
type Role string

// The roles a message may have. Readers map their format's names onto these
// and quarantine anything else.
const (
	System    Role = "system"
	User      Role = "user"
	Assistant Role = "assistant"
	Tool      Role = "tool"
)

// ParseRole maps a role name to a Role. It reports false for names it does not
// know, so readers can quarantine the record instead of guessing.
func ParseRole(s string) (Role, bool) {
	switch Role(s) {
	case System, User, Assistant, Tool:
		return Role(s), true
	}
	return "", false
}

// Message is one message of a conversation.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content"`
	// Original is the text Content was worded from, in a conversation made
	// by wording source texts (a simulated user revealing a task's pieces,
	// verbatim or rephrased); it may equal Content. Empty otherwise: in a
	// conversation where some messages have one, a message without one was
	// worded from nothing. Nothing sends it to a model; a strategy that
	// wants the sources rather than the wording (concat) reads it.
	Original string `json:"original,omitempty"`
}

// Source says where a conversation was read from: a file and a line (text
// formats, 1-based) or a row (columnar formats, 0-based). Text formats set
// Line and leave Row zero; columnar formats set Row and leave Line zero.
type Source struct {
	File string `json:"file"`
	Line int64  `json:"line,omitempty"`
	Row  int64  `json:"row,omitempty"`
}

// String renders the source as file:line or file#row for messages.
func (s Source) String() string {
	if s.Line > 0 {
		return fmt.Sprintf("%s:%d", s.File, s.Line)
	}
	return fmt.Sprintf("%s#%d", s.File, s.Row)
}

// Conversation is one multi-turn conversation.
//
// System holds a leading system message, if any; Messages holds the rest in
// order. Meta keeps the record's other fields exactly as the input had them
// (a JSON object, or nil). Language, Toxic and Redacted are lifted out of Meta
// by readers whose format has them, because filters need them; Language is
// empty when the format does not say, until the filter identifies it.
type Conversation struct {
	ID       string          `json:"id"`
	Source   Source          `json:"source"`
	Format   string          `json:"format"`
	System   string          `json:"system,omitempty"`
	Messages []Message       `json:"messages"`
	Language string          `json:"language,omitempty"`
	Toxic    bool            `json:"toxic,omitempty"`
	Redacted bool            `json:"redacted,omitempty"`
	Meta     json.RawMessage `json:"meta,omitempty"`
	// LanguageSource says where Language came from: LanguageFromInput
	// (the record's own field) or LanguageIdentified (a detector read the
	// user turns); empty while nothing has said. LanguageDetector names
	// the detector and its version and LanguageConfidence is its
	// confidence in [0,1]; both are set for identified languages only.
	LanguageSource     string  `json:"language_source,omitempty"`
	LanguageDetector   string  `json:"language_detector,omitempty"`
	LanguageConfidence float64 `json:"language_confidence,omitempty"`
}

// The values of Conversation.LanguageSource.
const (
	LanguageFromInput  = "input"
	LanguageIdentified = "identified"
)

// Size is about how many bytes the conversation holds: its text and its
// Meta. Writers that gather conversations before a commit bound the batch by
// it, so a run of long conversations cannot grow the batch's memory.
func (c *Conversation) Size() int {
	n := len(c.System) + len(c.Meta)
	for _, m := range c.Messages {
		n += len(m.Content)
	}
	return n
}

// ContentHash is a hash of the system message and the messages (roles and
// text) only, so the same conversation read from two files or formats hashes
// the same. Ingest uses it to drop exact duplicates.
func (c *Conversation) ContentHash() string {
	h := sha256.New()
	var n [8]byte
	write := func(s string) {
		l := len(s)
		for i := range n {
			n[i] = byte(l >> (8 * i))
		}
		h.Write(n[:])
		h.Write([]byte(s))
	}
	write(c.System)
	for _, m := range c.Messages {
		write(string(m.Role))
		write(m.Content)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}
