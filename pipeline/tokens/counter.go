package tokens

import (
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/pkoukk/tiktoken-go"
)

// DefaultEncoding is the encoding of current OpenAI chat models.
const DefaultEncoding = "o200k_base"

// encodings are the names whose BPE tables bpe/ holds. Anything
// else would make tiktoken-go try to download a table, which we never want.
var encodings = []string{"o200k_base", "cl100k_base", "p50k_base", "r50k_base"}

// Encodings lists the encoding names New accepts.
func Encodings() []string { return slices.Clone(encodings) }

// offline guards the one write ac3 makes to tiktoken-go's package-level
// loader. tiktoken-go keeps the loader in an unguarded global, so it must be
// set exactly once and before any table is loaded; a sync.Once does both and
// every path into tiktoken-go in ac3 goes through New.
var offline sync.Once

func useOfflineLoader() {
	offline.Do(func() { tiktoken.SetBpeLoader(bpeLoader{}) })
}

// Counter counts tokens of one encoding. It is safe for concurrent use:
// tiktoken-go's ordinary encoder only reads its rank tables, and the regexp2
// matcher it uses hands each caller its own runner.
//
// Building a Counter parses and indexes the whole BPE table (a few hundred
// milliseconds and tens of megabytes for o200k_base), so build one per run and
// share it.
type Counter struct {
	name string
	enc  *tiktoken.Tiktoken
	// framing holds MessageCost's overhead for the common roles, so the hot
	// path never tokenizes a role name.
	framing map[string]int
}

// New returns a Counter for the named encoding ("" means DefaultEncoding).
// Unknown names give an error that lists the supported ones.
func New(encoding string) (*Counter, error) {
	if encoding == "" {
		encoding = DefaultEncoding
	}
	if !slices.Contains(encodings, encoding) {
		return nil, fmt.Errorf("loading encoding %q: unknown encoding (supported: %s)",
			encoding, strings.Join(encodings, ", "))
	}
	useOfflineLoader()
	enc, err := tiktoken.GetEncoding(encoding)
	if err != nil {
		return nil, fmt.Errorf("loading encoding %q: %w", encoding, err)
	}
	c := &Counter{name: encoding, enc: enc, framing: map[string]int{}}
	for _, role := range []string{"system", "user", "assistant", "tool", "developer"} {
		c.framing[role] = PerMessage + c.Count(role)
	}
	return c, nil
}

// Encoding returns the encoding name, e.g. "o200k_base".
func (c *Counter) Encoding() string { return c.name }

// Count returns the number of tokens in text. Special-token markers such as
// "<|endoftext|>" are counted as the plain text they are, because conversation
// logs contain them as ordinary characters and a user cannot inject a control
// token through a chat API either.
//
// The count is exact except inside a run of more than MaxRun characters of
// one kind (white space, letters, or punctuation) — padding, ASCII art, a
// pasted blob. BPE merging takes time quadratic in such a run (100,000 spaces
// take seconds), so Count cuts it into MaxRun-character pieces and adds their
// counts, which can be off by about a token per cut.
func (c *Counter) Count(text string) int {
	if text == "" {
		return 0
	}
	if len(text) <= MaxRun {
		return len(c.enc.EncodeOrdinary(text))
	}
	n, start := 0, 0
	for cut := range cuts(text) {
		n += len(c.enc.EncodeOrdinary(text[start:cut]))
		start = cut
	}
	return n + len(c.enc.EncodeOrdinary(text[start:]))
}

// TokenEnds returns the byte offset in text at which each of its tokens
// ends, tokenized as Count tokenizes it: len(TokenEnds(text)) ==
// Count(text). It lets a caller count many prefixes of one text with one
// tokenization (see the filler strategy of package curate).
func (c *Counter) TokenEnds(text string) []int {
	var ends []int
	add := func(off int, piece string) {
		for _, t := range c.enc.EncodeOrdinary(piece) {
			off += len(c.enc.Decode([]int{t}))
			ends = append(ends, off)
		}
	}
	if len(text) <= MaxRun {
		add(0, text)
		return ends
	}
	start := 0
	for cut := range cuts(text) {
		add(start, text[start:cut])
		start = cut
	}
	add(start, text[start:])
	return ends
}

// Head is text cut to its first maxTokens tokens, counted as Count counts,
// at a character boundary; text itself when it is no longer (or maxTokens
// is 0 or less). What an embedding model with an input limit is sent.
func (c *Counter) Head(text string, maxTokens int) string {
	if maxTokens <= 0 || len(text) <= maxTokens {
		return text // a token is at least a byte long
	}
	// No token is longer than 16 bytes in the encodings we ship: cut
	// first so that a huge text is not tokenized whole.
	if pre := 16 * maxTokens; len(text) > pre {
		text = text[:pre]
	}
	ends := c.TokenEnds(text)
	if len(ends) <= maxTokens {
		return strings.ToValidUTF8(text, "")
	}
	cut := ends[maxTokens-1]
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut]
}

// MaxRun is the longest run of same-kind characters Count tokenizes in one
// piece. BPE on a 1,000-character piece takes about a millisecond.
const MaxRun = 1000

// runKind sorts characters the way the encodings' pre-tokenizers group them
// into pieces. Digits are their own kind because a piece holds at most three.
func runKind(r rune) int {
	switch {
	case unicode.IsSpace(r):
		return 1
	case unicode.IsLetter(r) || unicode.IsMark(r):
		return 2
	case unicode.IsNumber(r):
		return 3
	}
	return 4
}

// cuts yields byte offsets that split every run of more than MaxRun
// same-kind characters into pieces of MaxRun characters. Text without such
// runs yields nothing and is counted exactly.
func cuts(text string) iter.Seq[int] {
	return func(yield func(int) bool) {
		kind, run := 0, 0
		for i, r := range text {
			k := runKind(r)
			if k != kind || k == 3 {
				kind, run = k, 0
			}
			if run == MaxRun {
				if !yield(i) {
					return
				}
				run = 0
			}
			run++
		}
	}
}
