package ledger

import (
	"context"

	"github.com/klauspost/compress/zstd"
)

// Pending is a conversation with the variants of a stage that have no task
// recorded for it at their current version.
type Pending struct {
	Stored
	Variants []Variant // in the order they were asked for
}

// decodeChunk is how many pending conversations EachPending decodes and
// hands to fn at a time.
const decodeChunk = 128

// EachPending calls fn with the conversations, in seq order, that lack a
// recorded task of stage for at least one of variants, a page of up to size
// conversations examined at a time and at most 128 pending ones passed per
// call (pages with nothing pending are skipped). It covers every origin;
// View.EachPending plans one scope. It stops at the first error fn returns.
func (l *Ledger) EachPending(ctx context.Context, stage string, variants []Variant, size int, fn func(page []Pending) error) error {
	return l.In(AllOrigins).EachPending(ctx, stage, variants, size, fn)
}

// EachPending calls fn with the view's conversations, in seq order, that
// lack a recorded task of stage for at least one of variants, a page of up
// to size conversations examined at a time and at most 128 pending ones
// passed per call (pages with nothing pending are skipped). It stops at the
// first error fn returns.
//
// It is the planner's scan: it reads each page's seqs and task keys first
// and fetches and decodes only the pending conversations, so resuming a run
// whose work is mostly recorded costs a walk over keys instead of decoding
// every conversation (see BenchmarkResumePending). A scoped view reads its
// seqs from the origin index.
func (v View) EachPending(ctx context.Context, stage string, variants []Variant, size int, fn func(page []Pending) error) (err error) {
	l := v.l
	defer l.classify(&err)
	if len(variants) == 0 {
		return nil
	}
	if size <= 0 {
		size = 512
	}
	sp, err := l.split(ctx, v.scope)
	if err != nil {
		return err
	}
	if !sp.all && len(sp.in) == 0 {
		return nil // the run has no conversation of the scope's origins
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return err
	}
	defer dec.Close()
	seqs := make([]int64, 0, size)
	var after int64
	for {
		if seqs, err = l.seqsAfter(ctx, sp, after, size, seqs); err != nil {
			return err
		}
		if len(seqs) == 0 {
			return nil
		}
		upto := seqs[len(seqs)-1]
		// The page's range starts at its first seq: in a scoped view the
		// seqs since the last page belong to other origins, and reading
		// their tasks would make the first derived page read every task of
		// the ingested conversations before it.
		lo := seqs[0] - 1
		// seen[i*len(variants)+j]: seqs[i] has a task for variants[j].
		seen := make([]bool, len(seqs)*len(variants))
		index := make(map[int64]int, len(seqs))
		for i, s := range seqs {
			index[s] = i
		}
		for j, v := range variants {
			if err := l.taskStates(ctx, stage, v, lo, upto, func(seq int64, _ string) {
				if i, ok := index[seq]; ok {
					seen[i*len(variants)+j] = true
				}
			}); err != nil {
				return err
			}
		}
		var page []Pending
		var want []int64
		for i, s := range seqs {
			var missing []Variant
			for j, v := range variants {
				if !seen[i*len(variants)+j] {
					missing = append(missing, v)
				}
			}
			if len(missing) > 0 {
				page = append(page, Pending{Stored: Stored{Seq: s}, Variants: missing})
				want = append(want, s)
			}
		}
		// Decoded and handed over a chunk at a time: a decoded page is most
		// of what a planner holds, and a page of long conversations made
		// annotate's memory jump by a page's worth.
		from := lo
		for len(page) > 0 {
			n := min(len(page), decodeChunk)
			chunk, ws := page[:n], want[:n]
			if err := l.readConvs(ctx, dec, ws, from, ws[n-1], func(i int, s Stored) { chunk[i].Stored = s }); err != nil {
				return err
			}
			if err := fn(chunk); err != nil {
				return callerError{err}
			}
			clear(chunk) // the caller keeps what it still needs
			page, want, from = page[n:], want[n:], ws[n-1]
		}
		after = upto
	}
}
