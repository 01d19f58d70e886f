package curate

import (
	"hash/fnv"
	"iter"
	"strconv"
	"strings"

	"github.com/ac3/ac3/pipeline/tokens"
)

// fillerWords counts filler text without tokenizing it. Filler is words of
// fillerSentences joined by single spaces, and every encoding's
// pre-tokenizer cuts before each space, so the tokens of a cut are the sum of
// its words' tokens: each word after a space counted with that space, the
// first word of the text without one. The table holds those counts for the
// whole corpus, built once per encoding (a few hundred short words); a cut of
// w words then costs a walk over its sentences instead of a BPE run over its
// text, which was a third of the curate stage's CPU with filler on.
// TestFillerWordsMatchWholeCounts checks the sums against counting the text
// for every encoding.
type fillerWords struct {
	// first[k] is the tokens of sentence k's first word at the start of
	// the text; cum[k][j] the tokens of its first j words, each after a
	// space.
	first []int
	cum   [][]int
}

func newFillerWords(counter *tokens.Counter) *fillerWords {
	fw := &fillerWords{first: make([]int, len(fillerSentences)), cum: make([][]int, len(fillerSentences))}
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

// count returns the tokens of fillerText(id, i, words).
func (fw *fillerWords) count(id string, i, words int) int {
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

// fillerStream yields, without end, the indices into fillerSentences of the
// filler stream for message i of conversation id: a splitmix64 generator
// seeded by an FNV-1a hash of the id and index, never the same sentence
// twice in a row. Both are fixed algorithms, so the stream never depends on
// the Go version.
func fillerStream(id string, i int) iter.Seq[int] {
	return func(yield func(int) bool) {
		h := fnv.New64a()
		h.Write([]byte(id))
		h.Write([]byte{0})
		h.Write(strconv.AppendInt(nil, int64(i), 10))
		state := h.Sum64()
		prev := -1
		for {
			state += 0x9e3779b97f4a7c15
			z := state
			z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
			z = (z ^ (z >> 27)) * 0x94d049bb133111eb
			z ^= z >> 31
			k := int(z % uint64(len(fillerSentences)))
			if k == prev { // avoid saying the same thing twice in a row
				k = (k + 1) % len(fillerSentences)
			}
			prev = k
			if !yield(k) {
				return
			}
		}
	}
}
