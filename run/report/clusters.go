package report

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/ac3/ac3/pipeline/stats"
)

// convTable keeps the id of every conversation that has a verdict, in seq
// order, because the bootstrap visits conversations in id order and that
// order is only known once every id has been seen. Ids sit back to back in
// one byte slice, without pointers for the garbage collector to scan.
type convTable struct {
	seqs []int64  // increasing
	ends []uint32 // ends[i] is where the id of seqs[i] ends in ids
	ids  []byte
	// page holds the ids met in the page being read; endPage moves them
	// into the table in seq order, so it never holds more than a page.
	page map[int64]string
}

func newConvTable() *convTable { return &convTable{page: map[int64]string{}} }

// note records that the conversation has a verdict.
func (t *convTable) note(seq int64, id string) {
	if _, ok := t.page[seq]; !ok {
		t.page[seq] = id
	}
}

// endPage appends the page's conversations to the table.
func (t *convTable) endPage() error {
	seqs := make([]int64, 0, len(t.page))
	for s := range t.page {
		seqs = append(seqs, s)
	}
	slices.Sort(seqs)
	for _, s := range seqs {
		if n := len(t.seqs); n > 0 && s <= t.seqs[n-1] {
			return fmt.Errorf("reading judge units: conversation seq %d came after seq %d (pages out of order)", s, t.seqs[n-1])
		}
		t.seqs = append(t.seqs, s)
		t.ids = append(t.ids, t.page[s]...)
		t.ends = append(t.ends, uint32(len(t.ids)))
	}
	clear(t.page)
	return nil
}

func (t *convTable) id(i int) []byte {
	start := uint32(0)
	if i > 0 {
		start = t.ends[i-1]
	}
	return t.ids[start:t.ends[i]]
}

// ranks returns, for every table position, the position of its id in
// sorted order.
func (t *convTable) ranks() []uint32 {
	order := make([]uint32, len(t.seqs))
	for i := range order {
		order[i] = uint32(i)
	}
	slices.SortFunc(order, func(a, b uint32) int { return bytes.Compare(t.id(int(a)), t.id(int(b))) })
	ranks := make([]uint32, len(order))
	for r, i := range order {
		ranks[i] = uint32(r)
	}
	return ranks
}

// position finds seq in the table.
func (t *convTable) position(seq int64) (int, bool) {
	return slices.BinarySearch(t.seqs, seq)
}

// verdictTally folds the verdicts of one summary (a pair and dimension, overall,
// one turn type or one round): outcome counts and, per conversation with a
// valid verdict, the two numbers the bootstrap needs. Verdicts arrive in
// seq order (units are read by page and within a page by seq), so each
// conversation's verdicts are adjacent: the open conversation is kept in
// fields and, once the next one starts, appended to enc as three uvarints
// (seq minus the previous record's seq, n, twice the score). A record
// takes 3 or 4 bytes where a struct would take 12; at a million
// conversations that is what keeps per-round breakdowns affordable.
type verdictTally struct {
	counts stats.Counts
	enc    []byte
	recs   int   // records in enc
	prev   int64 // seq of the last record in enc
	open   bool
	seq    int64 // the open conversation
	cur    stats.Cluster
	err    error // verdicts out of seq order
}

func (t *verdictTally) add(seq int64, o stats.Outcome) {
	t.counts.Add(o)
	if !o.Valid() {
		return
	}
	if !t.open || seq != t.seq {
		if t.open && seq < t.seq && t.err == nil {
			t.err = fmt.Errorf("reading judge units: conversation seq %d came after seq %d", seq, t.seq)
		}
		t.flush()
		t.open, t.seq, t.cur = true, seq, stats.Cluster{}
	}
	t.cur.Add(o)
}

func (t *verdictTally) flush() {
	if !t.open {
		return
	}
	t.enc = binary.AppendUvarint(t.enc, uint64(t.seq-t.prev))
	t.enc = binary.AppendUvarint(t.enc, uint64(t.cur.N))
	t.enc = binary.AppendUvarint(t.enc, uint64(t.cur.S2))
	t.prev, t.open = t.seq, false
	t.recs++
}

// summary puts the records into conversation-id order and summarizes them,
// which gives what stats.Summarize gives for the same verdicts. It holds
// 12 bytes per record of this one summary while it runs.
func (t *verdictTally) summary(convs *convTable, ranks []uint32, so stats.Options) (stats.Summary, error) {
	if t.err != nil {
		return stats.Summary{}, t.err
	}
	t.flush()
	type ranked struct {
		rank uint32
		stats.Cluster
	}
	rs := make([]ranked, 0, t.recs)
	var seq int64
	for b := t.enc; len(b) > 0; {
		d, n1 := binary.Uvarint(b)
		n, n2 := binary.Uvarint(b[n1:])
		s2, n3 := binary.Uvarint(b[n1+n2:])
		b = b[n1+n2+n3:]
		seq += int64(d)
		p, ok := convs.position(seq)
		if !ok {
			return stats.Summary{}, fmt.Errorf("summarizing verdicts: conversation seq %d has no id", seq)
		}
		rs = append(rs, ranked{ranks[p], stats.Cluster{S2: int32(s2), N: int32(n)}})
	}
	slices.SortFunc(rs, func(a, b ranked) int { return cmp.Compare(a.rank, b.rank) })
	cs := make([]stats.Cluster, len(rs))
	for i, r := range rs {
		cs[i] = r.Cluster
	}
	return stats.SummarizeClusters(t.counts, cs, so), nil
}
