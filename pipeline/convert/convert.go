// Package convert streams conversation files straight into another format
// through the ingest filters, without a run file: the quick way to turn a
// WildChat dump into a filtered canonical Parquet file. It keeps nothing in
// memory but the record at hand and the writer's current row group.
package convert

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/ac3/ac3/io/record"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ingest"
)

// Writer takes conversations in order.
type Writer interface {
	Write(c *conv.Conversation) error
}

// Stats counts what a conversion did.
type Stats struct {
	Records int64
	Kept    int64
	Dropped map[string]int64
	Bad     map[record.Reason]int64
}

// Run reads every file with open, keeps what keep accepts, and writes it to w.
// Bad records are counted (and passed to onBad when it is set) and skipped.
func Run(ctx context.Context, files []string, open ingest.Opener, keep ingest.Keep, w Writer, onBad func(record.Bad)) (Stats, error) {
	st := Stats{Dropped: map[string]int64{}, Bad: map[record.Reason]int64{}}
	for _, f := range files {
		if err := one(ctx, f, open, keep, w, onBad, &st); err != nil {
			return st, err
		}
	}
	return st, nil
}

func one(ctx context.Context, path string, open ingest.Opener, keep ingest.Keep, w Writer, onBad func(record.Bad), st *Stats) error {
	r, _, err := open(ctx, path)
	if err != nil {
		return fmt.Errorf("opening %s: %w", path, err)
	}
	defer r.Close()
	for {
		rec, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
		st.Records++
		if rec.Bad != nil {
			st.Bad[rec.Bad.Reason]++
			if onBad != nil {
				onBad(*rec.Bad)
			}
			continue
		}
		if keep != nil {
			if ok, reason := keep(rec.Conv); !ok {
				st.Dropped[reason]++
				continue
			}
		}
		if err := w.Write(rec.Conv); err != nil {
			return fmt.Errorf("writing %s from %s: %w", rec.Conv.ID, path, err)
		}
		st.Kept++
	}
}
