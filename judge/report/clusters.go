package report

import (
	"bytes"
	"cmp"
	"slices"

	"github.com/ac3/ac3/pipeline/stats"
)

// convTable numbers the conversations that have a verdict, so a summary's
// per-conversation record holds a 4-byte index instead of an id. Ids are
// kept once, back to back in one byte slice without pointers for the
// garbage collector to scan, because the bootstrap visits conversations in
// id order and that order is only known once every id has been seen.
type convTable struct {
	ids  []byte   // every id, back to back
	ends []uint32 // ends[i] is where id i ends in ids
	// page maps the seqs of the page being read to their index; it is
	// cleared for each page, so it never holds more than one page.
	page map[int64]uint32
}

func newConvTable() *convTable { return &convTable{page: map[int64]uint32{}} }

// startPage forgets the previous page's seqs.
func (t *convTable) startPage() { clear(t.page) }

// index returns the conversation's index, adding it on first sight. A
// conversation is only ever seen within its own page.
func (t *convTable) index(seq int64, id string) uint32 {
	if i, ok := t.page[seq]; ok {
		return i
	}
	i := uint32(len(t.ends))
	t.ids = append(t.ids, id...)
	t.ends = append(t.ends, uint32(len(t.ids)))
	t.page[seq] = i
	return i
}

func (t *convTable) id(i uint32) []byte {
	start := uint32(0)
	if i > 0 {
		start = t.ends[i-1]
	}
	return t.ids[start:t.ends[i]]
}

// ranks returns, for every index, the position of its id in sorted order.
func (t *convTable) ranks() []uint32 {
	order := make([]uint32, len(t.ends))
	for i := range order {
		order[i] = uint32(i)
	}
	slices.SortFunc(order, func(a, b uint32) int { return bytes.Compare(t.id(a), t.id(b)) })
	ranks := make([]uint32, len(order))
	for r, i := range order {
		ranks[i] = uint32(r)
	}
	return ranks
}

// clusterRec is one conversation's verdicts in one summary: 12 bytes.
type clusterRec struct {
	conv uint32
	stats.Cluster
}

// tally folds the verdicts of one summary (a pair and dimension, overall
// or one turn type or round): outcome counts and one record per
// conversation with a valid verdict. Verdicts must arrive grouped by
// conversation, as they do when units are read in seq order: a record is
// added when the conversation differs from the last one's.
type tally struct {
	counts stats.Counts
	recs   []clusterRec
}

func (t *tally) add(conv uint32, o stats.Outcome) {
	t.counts.Add(o)
	if !o.Valid() {
		return
	}
	if n := len(t.recs); n == 0 || t.recs[n-1].conv != conv {
		t.recs = append(t.recs, clusterRec{conv: conv})
	}
	t.recs[len(t.recs)-1].Add(o)
}

// summary sorts the records into conversation-id order and summarizes
// them, which gives what stats.Summarize gives for the verdicts.
func (t *tally) summary(ranks []uint32, so stats.Options) stats.Summary {
	slices.SortFunc(t.recs, func(a, b clusterRec) int { return cmp.Compare(ranks[a.conv], ranks[b.conv]) })
	cs := make([]stats.Cluster, len(t.recs))
	for i, r := range t.recs {
		cs[i] = r.Cluster
	}
	return stats.SummarizeClusters(t.counts, cs, so)
}
