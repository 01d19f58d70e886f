package classify

import (
	"maps"
	"sort"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/stages/annotator"
)

// TypeShare is one turn type's count and share of the labelled turns, with
// a 95% Wilson interval. Turns are treated as independent here; turns of one
// conversation are correlated, so the interval is a little narrow.
type TypeShare struct {
	Type   string
	Count  int
	Share  float64
	Lo, Hi float64
}

// Summary describes the classify units of a run for the report.
type Summary struct {
	Turns         int // labelled turns (done units)
	Failed        int // failed units (malformed answers, rejected calls)
	Conversations int // conversations with at least one labelled turn
	// Types has one share per turn type, in Types() order, then one for
	// Unknown when the annotator abstained on any turn; shares are of Turns.
	Types []TypeShare
	// Annotators counts labels by who wrote them ("heuristic", "llm:<model>").
	Annotators map[string]int
	// SelfContained counts typed labels with no reference (an Unknown label
	// says nothing about references); Refs counts each
	// reference tag ("1a", "2u", ...).
	SelfContained int
	Refs          map[string]int
}

// Summarizer folds classify units into a Summary, one unit at a time, so a
// run of any size is summarised in memory that does not grow with it. Add
// units grouped by conversation, as ledger.Units yields them (see
// annotator.Tally). Use NewSummarizer; the zero value is not ready.
type Summarizer struct {
	tally         annotator.Tally
	counts        map[string]int
	selfContained int
	refs          map[string]int
}

// NewSummarizer returns an empty Summarizer.
func NewSummarizer() *Summarizer {
	return &Summarizer{counts: map[string]int{}, refs: map[string]int{}}
}

// Add counts one classify unit (normally of one variant). Units that are
// not done or do not decode count as failed.
func (z *Summarizer) Add(u ledger.Unit) {
	l, _, ok := annotator.Count(&z.tally, u, Decode, func(l Label) string { return l.Annotator })
	if !ok {
		return
	}
	z.counts[l.Type]++
	if len(l.Refs) == 0 && l.Type != Unknown {
		z.selfContained++
	}
	for _, r := range l.Refs {
		z.refs[r]++
	}
}

// Summary returns the summary of the units added so far. It copies the
// maps, so adding more units later does not change a summary returned.
func (z *Summarizer) Summary() Summary {
	s := Summary{Turns: z.tally.Turns, Failed: z.tally.Failed, Conversations: z.tally.Conversations,
		Annotators: z.tally.Annotators(), SelfContained: z.selfContained, Refs: maps.Clone(z.refs)}
	types := Types()
	if z.counts[Unknown] > 0 {
		types = append(types, Unknown)
	}
	for _, t := range types {
		ts := TypeShare{Type: t, Count: z.counts[t]}
		ts.Share, ts.Lo, ts.Hi = annotator.Share(ts.Count, s.Turns)
		s.Types = append(s.Types, ts)
	}
	return s
}

// RefTags returns the reference tags of s in a stable order (by distance,
// user before assistant), for tables.
func (s Summary) RefTags() []string {
	tags := make([]string, 0, len(s.Refs))
	for t := range s.Refs {
		tags = append(tags, t)
	}
	sort.Slice(tags, func(i, j int) bool {
		di, si, _ := ParseRef(tags[i])
		dj, sj, _ := ParseRef(tags[j])
		if di != dj {
			return di < dj
		}
		return si > sj
	})
	return tags
}
