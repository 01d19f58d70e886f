package classify

import (
	"sort"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/stats"
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

// Summarize summarises classify units (normally those of one variant, as
// read with ledger.Units). Units that do not decode count as failed.
func Summarize(units []ledger.Unit) Summary {
	s := Summary{Annotators: map[string]int{}, Refs: map[string]int{}}
	counts := map[string]int{}
	convs := map[string]bool{}
	for _, u := range units {
		if u.Status != "done" {
			s.Failed++
			continue
		}
		l, err := Decode(u.Output)
		if err != nil {
			s.Failed++
			continue
		}
		s.Turns++
		convs[u.ConvID] = true
		counts[l.Type]++
		s.Annotators[l.Annotator]++
		if len(l.Refs) == 0 && l.Type != Unknown {
			s.SelfContained++
		}
		for _, r := range l.Refs {
			s.Refs[r]++
		}
	}
	s.Conversations = len(convs)
	types := Types()
	if counts[Unknown] > 0 {
		types = append(types, Unknown)
	}
	for _, t := range types {
		ts := TypeShare{Type: t, Count: counts[t]}
		if s.Turns > 0 {
			ts.Share = float64(ts.Count) / float64(s.Turns)
			iv := stats.Wilson(float64(ts.Count), s.Turns, 0.95)
			ts.Lo, ts.Hi = iv.Lo, iv.Hi
		}
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
