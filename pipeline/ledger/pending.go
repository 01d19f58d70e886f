package ledger

import (
	"context"
	"fmt"

	"github.com/klauspost/compress/zstd"
)

// Pending is a conversation with the variants of a stage that have no task
// recorded for it at their current version.
type Pending struct {
	Stored
	Variants []Variant // in the order they were asked for
}

// EachPending calls fn with the conversations, in seq order, that lack a
// recorded task of stage for at least one of variants, a page of up to size
// conversations examined per call (pages with nothing pending are skipped).
// It stops at the first error fn returns.
//
// It is the planner's scan: it reads each page's seqs and task keys first
// and fetches and decodes only the pending conversations, so resuming a run
// whose work is mostly recorded costs a walk over keys instead of decoding
// every conversation (see BenchmarkResumePending).
func (l *Ledger) EachPending(ctx context.Context, stage string, variants []Variant, size int, fn func(page []Pending) error) (err error) {
	defer l.classify(&err)
	if len(variants) == 0 {
		return nil
	}
	if size <= 0 {
		size = 512
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return err
	}
	defer dec.Close()
	seqs := make([]int64, 0, size)
	var after int64
	for {
		seqs = seqs[:0]
		if err := l.query(ctx, func(rows rowScanner) error {
			var s int64
			if err := rows.Scan(&s); err != nil {
				return err
			}
			seqs = append(seqs, s)
			return nil
		}, `SELECT seq FROM conversations WHERE seq > ? ORDER BY seq LIMIT ?`, after, size); err != nil {
			return fmt.Errorf("reading conversations after %d: %w", after, err)
		}
		if len(seqs) == 0 {
			return nil
		}
		upto := seqs[len(seqs)-1]
		// seen[i*len(variants)+j]: seqs[i] has a task for variants[j].
		seen := make([]bool, len(seqs)*len(variants))
		index := make(map[int64]int, len(seqs))
		for i, s := range seqs {
			index[s] = i
		}
		for j, v := range variants {
			if err := l.taskStates(ctx, stage, v, after, upto, func(seq int64, _ string) {
				if i, ok := index[seq]; ok {
					seen[i*len(variants)+j] = true
				}
			}); err != nil {
				return err
			}
		}
		var page []Pending
		for i, s := range seqs {
			var missing []Variant
			for j, v := range variants {
				if !seen[i*len(variants)+j] {
					missing = append(missing, v)
				}
			}
			if len(missing) > 0 {
				page = append(page, Pending{Stored: Stored{Seq: s}, Variants: missing})
			}
		}
		if len(page) > 0 {
			if err := l.fillConversations(ctx, dec, page, after, upto); err != nil {
				return err
			}
			if err := fn(page); err != nil {
				return callerError{err}
			}
		}
		after = upto
	}
}

// fillConversations reads and decodes the conversations of page, which lie
// in (after, upto]. With most of the range pending it reads the range in one
// query; with few, one row each, so finished conversations are not read.
func (l *Ledger) fillConversations(ctx context.Context, dec *zstd.Decoder, page []Pending, after, upto int64) error {
	if int64(len(page))*4 >= upto-after {
		i := 0
		return l.query(ctx, func(rows rowScanner) error {
			var seq int64
			var data []byte
			if err := rows.Scan(&seq, &data); err != nil {
				return err
			}
			for i < len(page) && page[i].Seq < seq {
				i++
			}
			if i == len(page) || page[i].Seq != seq {
				return nil // recorded: not decoded
			}
			c, err := decodeConv(dec, data)
			if err != nil {
				return l.damaged("decoding conversation seq %d: %w", seq, err)
			}
			page[i].Conv = c
			return nil
		}, `SELECT seq, data FROM conversations WHERE seq > ? AND seq <= ? ORDER BY seq`, after, upto)
	}
	for i := range page {
		var data []byte
		if err := l.r.QueryRowContext(ctx, `SELECT data FROM conversations WHERE seq = ?`, page[i].Seq).Scan(&data); err != nil {
			return fmt.Errorf("reading conversation seq %d: %w", page[i].Seq, err)
		}
		c, err := decodeConv(dec, data)
		if err != nil {
			return l.damaged("decoding conversation seq %d: %w", page[i].Seq, err)
		}
		page[i].Conv = c
	}
	return nil
}
