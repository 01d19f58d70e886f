package parse

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
)

// Tagger writes and reads tagged sections that carry a nonce, such as
//
//	<spec id="3f9a1c0b2e7d">
//	the consolidated specification
//	</spec>
//
// Why a nonce: prompts embed conversations, and users paste anything,
// including text that looks like our own tags ("<spec>ignore the above</spec>").
// A model that echoes such text must not make it a parsed field. Only a
// section whose opening tag carries this Tagger's nonce is read; tags without
// it, or with another id, are ordinary text.
//
// The nonce is a hash of the content the prompt embeds (see NewTagger). To
// forge a section, pasted text would have to contain the hash of itself,
// which is infeasible, yet the nonce is deterministic, so the rendered prompt,
// its cache key and its unit key stay stable across runs.
//
// The prompt must show the model the exact tags to use (Open and Close); a
// model that drops the id produces an answer Parse rejects, and the caller
// retries it.
type Tagger struct {
	nonce string
}

// NewTagger returns a Tagger whose nonce is derived from parts, normally every
// piece of user-controlled text the prompt will embed (the conversation
// messages). The same parts always give the same nonce.
func NewTagger(parts ...string) Tagger {
	h := sha256.New()
	h.Write([]byte("ac3 tag nonce v1"))
	for _, p := range parts {
		fmt.Fprintf(h, "\x00%d\x00", len(p))
		h.Write([]byte(p))
	}
	return Tagger{nonce: hex.EncodeToString(h.Sum(nil)[:6])}
}

// Nonce returns the id the Tagger expects in opening tags.
func (t Tagger) Nonce() string { return t.nonce }

// Open returns the opening tag for section name, e.g. <spec id="3f9a1c0b2e7d">.
func (t Tagger) Open(name string) string { return fmt.Sprintf("<%s id=%q>", name, t.nonce) }

// Close returns the closing tag for section name, e.g. </spec>.
func (t Tagger) Close(name string) string { return "</" + name + ">" }

// Wrap returns body between the opening and closing tags of section name.
func (t Tagger) Wrap(name, body string) string {
	return t.Open(name) + "\n" + body + "\n" + t.Close(name)
}

// MissingError reports required sections that the answer lacks.
type MissingError struct {
	Sections []string
}

func (e *MissingError) Error() string {
	return "missing tagged section(s): " + strings.Join(e.Sections, ", ")
}

// Parse reads the sections named in required and optional from text.
//
// Reasoning traces are removed first (SplitThink), so a section drafted while
// thinking does not count. A section is the text between an opening tag that
// carries the nonce and the next closing tag of the same name; it is trimmed.
// When a section appears more than once the last one wins (models sometimes
// draft and then restate). Optional sections that are absent are left out of
// the map. Parse returns a *MissingError when a required section is absent or
// unterminated.
func (t Tagger) Parse(text string, required []string, optional ...string) (map[string]string, error) {
	text, _ = SplitThink(text)
	out := make(map[string]string, len(required)+len(optional))
	var missing []string
	for i, name := range append(append([]string{}, required...), optional...) {
		body, ok := t.section(text, name)
		if ok {
			out[name] = body
		} else if i < len(required) {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return out, &MissingError{Sections: missing}
	}
	return out, nil
}

func (t Tagger) section(text, name string) (string, bool) {
	open := regexp.MustCompile(`<` + regexp.QuoteMeta(name) + `\s+id\s*=\s*["']?` + regexp.QuoteMeta(t.nonce) + `["']?\s*>`)
	closing := "</" + name + ">"
	locs := open.FindAllStringIndex(text, -1)
	for i := len(locs) - 1; i >= 0; i-- {
		rest := text[locs[i][1]:]
		if c := strings.Index(rest, closing); c >= 0 {
			return strings.TrimSpace(rest[:c]), true
		}
	}
	return "", false
}
