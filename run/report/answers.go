package report

import (
	"encoding/binary"
	"hash/fnv"
	"strings"
	"unicode/utf8"

	"github.com/ac3/ac3/stages/curate/curated"
	"github.com/ac3/ac3/stages/respond"
)

// variantTurn names one stage variant's unit on a turn of the page.
type variantTurn struct {
	seq     int64
	turn    int
	variant string
}

// sampleLen is the length of one generated answer.
type sampleLen struct{ index, chars int }

// answered is what a respond unit of the page says about its turn: the
// curate variant its context came from and its answers' lengths.
type answered struct {
	strategy string
	lens     []sampleLen
}

// pageAnswers is what the judge units of a page are joined with: the hash
// of every curated context and the lengths of every generated answer. It
// holds one page and is cleared before the next.
type pageAnswers struct {
	contexts map[variantTurn]uint64
	answers  map[variantTurn]answered
}

func newPageAnswers() *pageAnswers {
	return &pageAnswers{contexts: map[variantTurn]uint64{}, answers: map[variantTurn]answered{}}
}

func (p *pageAnswers) reset() {
	clear(p.contexts)
	clear(p.answers)
}

// contextHash identifies a curated context by its parts: two strategies
// whose parts are equal send the same messages.
func contextHash(parts []curated.Part) uint64 {
	h := fnv.New64a()
	var buf []byte
	for _, pt := range parts {
		buf = append(buf[:0], pt.Role...)
		buf = binary.AppendVarint(append(buf, 0), int64(pt.Ref))
		buf = binary.AppendVarint(buf, int64(pt.Fill))
		if pt.Join {
			buf = append(buf, 1)
		} else {
			buf = append(buf, 0)
		}
		buf = binary.AppendUvarint(buf, uint64(len(pt.Text)))
		h.Write(buf)
		h.Write([]byte(pt.Text))
	}
	return h.Sum64()
}

func (p *pageAnswers) addContext(seq int64, turn int, variant string, parts []curated.Part) {
	p.contexts[variantTurn{seq, turn, variant}] = contextHash(parts)
}

// answerChars is an answer's length as the length-controlled win rate
// reads it: characters of the answer without its reasoning trace, as
// AlpacaEval measures outputs.
func answerChars(s respond.Sample) int { return utf8.RuneCountInString(strings.TrimSpace(s.Text)) }

func (p *pageAnswers) addAnswers(seq int64, turn int, variant string, o respond.Output) {
	a := answered{strategy: o.Strategy}
	for _, s := range o.Samples {
		a.lens = append(a.lens, sampleLen{s.Index, answerChars(s)})
	}
	p.answers[variantTurn{seq, turn, variant}] = a
}

// length returns the length of a respond variant's answer sample on a turn.
func (p *pageAnswers) length(seq int64, turn int, variant string, sample int) (int, bool) {
	for _, l := range p.answers[variantTurn{seq, turn, variant}].lens {
		if l.index == sample {
			return l.chars, true
		}
	}
	return 0, false
}

// sameContext reports whether two respond variants answered a turn from
// contexts with equal parts; known is false when either is not in the
// page (its curate or respond unit is missing).
func (p *pageAnswers) sameContext(seq int64, turn int, a, b string) (same, known bool) {
	ra, oka := p.answers[variantTurn{seq, turn, a}]
	rb, okb := p.answers[variantTurn{seq, turn, b}]
	if !oka || !okb {
		return false, false
	}
	ha, oka := p.contexts[variantTurn{seq, turn, ra.strategy}]
	hb, okb := p.contexts[variantTurn{seq, turn, rb.strategy}]
	if !oka || !okb {
		return false, false
	}
	return ha == hb, true
}
