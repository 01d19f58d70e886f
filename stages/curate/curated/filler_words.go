package curated

import (
	"strings"

	"github.com/ac3/ac3/pipeline/tokens"
)

// FillerWords counts filler text without tokenizing it. Filler is words of
// fillerSentences joined by single spaces, and every encoding's
// pre-tokenizer cuts before each space, so the tokens of a cut are the sum of
// its words' tokens: each word after a space counted with that space, the
// first word of the text without one. The table holds those counts for the
// whole corpus, built once per encoding (a few hundred short words); a cut of
// w words then costs a walk over its sentences instead of a BPE run over its
// text, which was a third of the curate stage's CPU with filler on.
// TestFillerWordsMatchWholeCounts checks the sums against counting the text
// for every encoding. A table is read-only once built, so the conversations
// of a stage share one.
type FillerWords struct {
	// first[k] is the tokens of sentence k's first word at the start of
	// the text; cum[k][j] the tokens of its first j words, each after a
	// space.
	first []int
	cum   [][]int
}

// NewFillerWords builds the table for counter's encoding.
func NewFillerWords(counter *tokens.Counter) *FillerWords {
	fw := &FillerWords{first: make([]int, len(fillerSentences)), cum: make([][]int, len(fillerSentences))}
	for k, s := range fillerSentences {
		words := strings.Fields(s)
		fw.first[k] = counter.Count(words[0])
		cum := make([]int, len(words)+1)
		for j, w := range words {
			cum[j+1] = cum[j] + counter.Count(" "+w)
		}
		fw.cum[k] = cum
	}
	return fw
}

// Count returns the tokens of FillerText(id, i, words).
func (fw *FillerWords) Count(id string, i, words int) int {
	n, total := 0, 0
	for k := range fillerStream(id, i) {
		if n >= words {
			break
		}
		cum := fw.cum[k]
		take := min(len(cum)-1, words-n)
		total += cum[take]
		if n == 0 {
			total += fw.first[k] - cum[1]
		}
		n += take
	}
	return total
}
