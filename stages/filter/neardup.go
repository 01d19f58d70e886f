package filter

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unicode"
	"unicode/utf8"

	minhash "github.com/dgryski/go-minhash"
	"github.com/zeebo/xxh3"

	"github.com/ac3/ac3/pipeline/conv"
)

// ReasonNearDuplicate is the drop reason of a conversation whose user turns
// nearly repeat those of a conversation kept before it (ingest --dedupe
// near). Like ReasonDuplicate it is decided by ingest, never by Check.
const ReasonNearDuplicate Reason = "near_duplicate"

// Near-duplicate defaults. See NearOptions for why.
const (
	DefaultNearThreshold = 0.8
	DefaultShingleWords  = 3
	// MinNearThreshold is the lowest threshold accepted: below it the
	// banding needs so many bands of so few rows that almost every pair
	// of conversations on a common topic becomes a candidate.
	MinNearThreshold = 0.5
	// MaxShingleWords bounds NearOptions.ShingleWords.
	MaxShingleWords = 16
	// Permutations is the number of minimums in a signature, as in
	// datasketch's and datatrove's defaults (128 and 112): the estimate's
	// standard error at a similarity of 0.8 is sqrt(0.8·0.2/128) ≈ 0.035.
	Permutations = 128
	// candidateRecall is the least probability that the banding makes a
	// pair at exactly the threshold a candidate; pairs more similar than
	// the threshold are found more often still.
	candidateRecall = 0.95
)

// NearOptions configure near-duplicate detection over the user turns.
//
// The user turns of a conversation, joined in order, are lowercased and cut
// into words (runs of letters, marks and digits; every other character
// separates words). Scripts written without spaces (Han, kana, Thai, Lao,
// Khmer, Myanmar) count each character as a word, so their texts shingle
// as finely as spaced ones. A shingle is ShingleWords consecutive words; a
// text shorter than that is one shingle. Two conversations are near
// duplicates when the Jaccard similarity of their shingle sets, estimated
// from 128 MinHash minimums, is at least Threshold.
//
// Why three-word shingles, where datatrove's web-page default is five: chat
// prompts are short. In a 30-word prompt one edited word changes up to k of
// its shingles, which leaves a Jaccard similarity of about 0.68 with
// five-word shingles but 0.81 with three, so "the same prompt sent again
// with a small edit" stays above the default threshold of 0.8. Unrelated
// texts still share almost no three-word shingles.
type NearOptions struct {
	// Threshold is the estimated Jaccard similarity at or above which a
	// conversation is dropped: MinNearThreshold to 1; 0 means
	// DefaultNearThreshold.
	Threshold float64
	// ShingleWords is the words per shingle, 1 to MaxShingleWords; 0 means
	// DefaultShingleWords.
	ShingleWords int
}

// WithDefaults returns o with its zero fields set to the defaults.
func (o NearOptions) WithDefaults() NearOptions {
	if o.Threshold == 0 {
		o.Threshold = DefaultNearThreshold
	}
	if o.ShingleWords == 0 {
		o.ShingleWords = DefaultShingleWords
	}
	return o
}

// Validate reports every invalid field, each as a *FieldError (fields
// NearThreshold and NearShingleWords), joined. Zero fields are valid: they
// take the defaults.
func (o NearOptions) Validate() error {
	var errs []error
	if t := o.Threshold; t != 0 && (math.IsNaN(t) || t < MinNearThreshold || t > 1) {
		errs = append(errs, &FieldError{Field: "NearThreshold", Msg: fmt.Sprintf("%v is not a similarity between %v and 1", t, MinNearThreshold)})
	}
	if w := o.ShingleWords; w < 0 || w > MaxShingleWords {
		errs = append(errs, &FieldError{Field: "NearShingleWords", Msg: fmt.Sprintf("%d is not between 1 and %d words", w, MaxShingleWords)})
	}
	return errors.Join(errs...)
}

// Near computes the MinHash signature of a conversation's user turns and
// the LSH band keys under which it is indexed. It is immutable once built,
// so one Near may be shared by any number of goroutines.
type Near struct {
	threshold float64
	shingle   int
	bands     int
	rows      int
}

// NewNear validates opts, fills in its defaults and builds a Near.
func NewNear(opts NearOptions) (*Near, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.WithDefaults()
	b, r := lshParams(opts.Threshold, Permutations)
	return &Near{threshold: opts.Threshold, shingle: opts.ShingleWords, bands: b, rows: r}, nil
}

// Threshold is the similarity at or above which a conversation is a near
// duplicate.
func (n *Near) Threshold() float64 { return n.threshold }

// Banding reports the number of bands and the rows (minimums) per band.
func (n *Near) Banding() (bands, rows int) { return n.bands, n.rows }

// lshParams chooses the banding for threshold t and perms minimums: the
// most rows per band (the fewest false candidates) for which a pair of
// similarity exactly t shares at least one band with probability
// candidateRecall. Candidates are then compared by their signatures, so a
// false candidate costs a comparison, while a missed pair is a duplicate
// kept. (datasketch balances the two errors equally instead, which at 0.8
// finds a pair of similarity 0.8 less than half the time.)
func lshParams(t float64, perms int) (bands, rows int) {
	for r := perms; r >= 1; r-- {
		b := perms / r
		if 1-math.Pow(1-math.Pow(t, float64(r)), float64(b)) >= candidateRecall {
			return b, r
		}
	}
	return perms, 1
}

// The two hash functions MinWise combines into its Permutations hash
// functions (h1 + i·h2). The seeds are fixed: signatures are stored in run
// files and must compare across processes and versions.
func hash1(b []byte) uint64 { return xxh3.HashSeed(b, 0x6163335f6e656172) }
func hash2(b []byte) uint64 { return xxh3.HashSeed(b, 0x6d696e6861736832) | 1 }

// Sketch returns the signature of c's user turns (Permutations minimums,
// 4 bytes each, for Similarity) and its band keys. ok is false when the
// user turns hold no word at all: such a conversation has nothing to
// compare and is neither dropped nor indexed.
func (n *Near) Sketch(c *conv.Conversation) (sig []byte, bands []int64, ok bool) {
	mw := minhash.NewMinWise(hash1, hash2, Permutations)
	if !n.eachShingle(c, mw.Push) {
		return nil, nil, false
	}
	mins := mw.Signature()
	sig = make([]byte, 4*len(mins))
	for i, m := range mins {
		// The low 32 bits of a minimum: two different minimums agree
		// there once in four billion, which moves no estimate.
		binary.LittleEndian.PutUint32(sig[4*i:], uint32(m))
	}
	bands = make([]int64, n.bands)
	var buf [1 + 8*Permutations]byte
	for b := range n.bands {
		// The band's number goes into its key: equal rows in different
		// bands say nothing.
		buf[0] = byte(b)
		for r := range n.rows {
			binary.LittleEndian.PutUint64(buf[1+8*r:], mins[b*n.rows+r])
		}
		bands[b] = int64(xxh3.Hash(buf[:1+8*n.rows]))
	}
	return sig, bands, true
}

// eachShingle calls fn with each shingle of c's user turns, repeats
// included, and reports false when they hold no word. A shingle is its
// words, each followed by one space but the last; fn must not keep it.
func (n *Near) eachShingle(c *conv.Conversation, fn func([]byte)) bool {
	var text []byte
	var ends []int // end offset in text of each word
	for i := range c.Messages {
		if c.Messages[i].Role != conv.User {
			continue
		}
		text, ends = appendWords(text, ends, c.Messages[i].Content)
	}
	if len(ends) == 0 {
		return false
	}
	if len(ends) <= n.shingle {
		fn(text[:ends[len(ends)-1]])
		return true
	}
	start := 0 // of the shingle's first word
	for i := n.shingle - 1; i < len(ends); i++ {
		fn(text[start:ends[i]])
		start = ends[i-n.shingle+1] + 1
	}
	return true
}

// ExactSimilarity is the Jaccard similarity of the shingle sets of a's and
// b's user turns, computed exactly, which Sketch's signatures estimate. It
// is for checking the estimate (tests, benchmarks): it holds both sets in
// memory. Conversations without words have similarity 0.
func (n *Near) ExactSimilarity(a, b *conv.Conversation) float64 {
	set := map[string]bool{}
	n.eachShingle(a, func(s []byte) { set[string(s)] = true })
	inA := len(set)
	inter, union := 0, inA
	seen := map[string]bool{}
	n.eachShingle(b, func(s []byte) {
		k := string(s)
		if seen[k] {
			return
		}
		seen[k] = true
		if set[k] {
			inter++
		} else {
			union++
		}
	})
	if union == 0 {
		return 0
	}
	return float64(inter) / float64(union)
}

// appendWords appends the words of s to text, lowercased, each followed by
// one space, and records where each word ends (before its space).
func appendWords(text []byte, ends []int, s string) ([]byte, []int) {
	inWord := false
	end := func() {
		if inWord {
			ends = append(ends, len(text))
			text = append(text, ' ')
			inWord = false
		}
	}
	for _, r := range s {
		// Invalid UTF-8 decodes as RuneError, a symbol: a separator.
		switch {
		case unspaced(r):
			end()
			text = utf8.AppendRune(text, r)
			inWord = true
			end()
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			text = utf8.AppendRune(text, unicode.ToLower(r))
			inWord = true
		default:
			end()
		}
	}
	end()
	return text, ends
}

// unspaced reports whether r belongs to a script written without spaces
// between words.
func unspaced(r rune) bool {
	if r < 0x0e00 {
		return false // Latin, Greek, Cyrillic, Arabic, Hebrew, Devanagari, ...
	}
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Thai, unicode.Lao, unicode.Khmer, unicode.Myanmar)
}

// ErrSignature is returned by Similarity for signatures that are not two
// of the same length made by Sketch.
var ErrSignature = errors.New("malformed near-duplicate signature")

// Similarity estimates the Jaccard similarity of the shingle sets of two
// conversations from their signatures: the share of minimums they agree
// on. It fails with ErrSignature when the signatures differ in length or
// are not signatures at all (a damaged run file), never panics.
func Similarity(a, b []byte) (float64, error) {
	if len(a) != len(b) || len(a) == 0 || len(a)%4 != 0 {
		return 0, fmt.Errorf("%w: %d and %d bytes", ErrSignature, len(a), len(b))
	}
	same := 0
	for i := 0; i < len(a); i += 4 {
		if binary.LittleEndian.Uint32(a[i:]) == binary.LittleEndian.Uint32(b[i:]) {
			same++
		}
	}
	return float64(same) / float64(len(a)/4), nil
}
