package curated

import (
	"hash/fnv"
	"iter"
	"strconv"
	"strings"
)

// FillerVersion changes whenever fillerSentences or the way words are drawn
// from them changes: it is the version of what a filler part stands for,
// which the filler strategy's version carries.
const FillerVersion = "1"

// FillerText returns the first words words of the filler stream for message
// i of conversation id: the sentences fillerStream picks, cut after words
// words. It is what a filler part (FillerPart) materializes into.
func FillerText(id string, i, words int) string {
	var b strings.Builder
	n := 0
	for k := range fillerStream(id, i) {
		if n >= words {
			break
		}
		for w := range strings.FieldsSeq(fillerSentences[k]) {
			if n == words {
				break
			}
			if n > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(w)
			n++
		}
	}
	return b.String()
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
