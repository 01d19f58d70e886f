// Package convert streams conversation files straight into another format
// through the ingest filters, without a run file: the quick way to turn a
// WildChat dump into a filtered canonical Parquet file.
//
// Text inputs opened with WithText are split into lines on one goroutine,
// decoded and filtered in ordered batches on a small pool, and written on one
// goroutine in input order; other inputs (Parquet, Arrow, or any input when
// WithText is not given) are read record by record. Either way memory holds a
// bounded number of batches and the writer's current row group, whatever the
// file size.
package convert

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"

	"github.com/ac3/ac3/io/detect"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ingest"
	"github.com/ac3/ac3/pipeline/record"
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

// Option tunes Run.
type Option func(*options)

type options struct {
	text       *detect.Options
	workers    int
	batchLines int
	batchBytes int
}

// Defaults for the parallel text path.
const (
	// DefaultBatchLines is the most chunks in one batch: enough that the
	// hand-off between goroutines costs little next to decoding them.
	DefaultBatchLines = 256
	// DefaultBatchBytes ends a batch early when its lines are long, so a
	// few huge records do not make batches of hundreds of megabytes.
	DefaultBatchBytes = 1 << 20
)

// WithText makes Run open each input with detect.OpenText(ctx, path, o) and
// decode and filter its records on several goroutines. Inputs OpenText
// refuses (Parquet, Arrow) fall back to the opener. The records, their order
// and the counts are the same as through the opener, provided it opens text
// with the same Format and MaxLineBytes as o. keep must then be safe to call
// from several goroutines at once (filter.Filter.Check is).
func WithText(o detect.Options) Option {
	return func(opts *options) { opts.text = &o }
}

// WithWorkers sets how many goroutines decode and filter text batches;
// GOMAXPROCS when n <= 0.
func WithWorkers(n int) Option {
	return func(opts *options) { opts.workers = n }
}

// WithBatch sets the most lines and bytes per batch on the text path;
// n <= 0 keeps the default.
func WithBatch(lines, bytes int) Option {
	return func(opts *options) { opts.batchLines, opts.batchBytes = lines, bytes }
}

// Run reads every file, keeps what keep accepts (nil keeps everything), and
// writes it to w in input order. Bad records are counted, passed to onBad
// when it is set, and skipped; dropped records are counted by reason. w and
// onBad are called from one goroutine at a time, though with WithText not
// the caller's. Run stops at the first error opening, reading or writing,
// or when ctx is done, and returns the counts so far with the error.
func Run(ctx context.Context, files []string, open ingest.Opener, keep ingest.Keep, w Writer, onBad func(record.Bad), opts ...Option) (Stats, error) {
	o := options{workers: runtime.GOMAXPROCS(0), batchLines: DefaultBatchLines, batchBytes: DefaultBatchBytes}
	for _, f := range opts {
		f(&o)
	}
	if o.workers <= 0 {
		o.workers = runtime.GOMAXPROCS(0)
	}
	if o.batchLines <= 0 {
		o.batchLines = DefaultBatchLines
	}
	if o.batchBytes <= 0 {
		o.batchBytes = DefaultBatchBytes
	}
	st := Stats{Dropped: map[string]int64{}, Bad: map[record.Reason]int64{}}
	sink := &sink{keep: keep, w: w, onBad: onBad, st: &st}
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		if o.text != nil {
			t, err := detect.OpenText(ctx, f, *o.text)
			if err == nil {
				if err := runText(ctx, f, t, sink, o); err != nil {
					return st, err
				}
				continue
			}
			// Not text (or not openable at all): the opener either
			// reads it or says what is wrong in its own words.
		}
		if err := runRecords(ctx, f, open, sink); err != nil {
			return st, err
		}
	}
	return st, nil
}

// sink applies the filter, counts and writes; it is the one place records
// end up, whichever path read them.
type sink struct {
	keep  ingest.Keep
	w     Writer
	onBad func(record.Bad)
	st    *Stats
}

// put counts rec and writes it if it is good and kept; reason is the
// filter's reason when it is not.
func (s *sink) put(rec record.Record, keep bool, reason string, file string) error {
	s.st.Records++
	if rec.Bad != nil {
		s.st.Bad[rec.Bad.Reason]++
		if s.onBad != nil {
			s.onBad(*rec.Bad)
		}
		return nil
	}
	if !keep {
		s.st.Dropped[reason]++
		return nil
	}
	if err := s.w.Write(rec.Conv); err != nil {
		return fmt.Errorf("writing %s from %s: %w", rec.Conv.ID, file, err)
	}
	s.st.Kept++
	return nil
}

// verdict runs the filter on a good record; bad records are not filtered.
// It only reads s.keep, so workers may call it concurrently.
func (s *sink) verdict(rec record.Record) (keep bool, reason string) {
	if rec.Bad != nil || s.keep == nil {
		return true, ""
	}
	return s.keep(rec.Conv)
}

// runRecords reads one file record by record on the caller's goroutine.
func runRecords(ctx context.Context, path string, open ingest.Opener, s *sink) error {
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
		keep, reason := s.verdict(rec)
		if err := s.put(rec, keep, reason, path); err != nil {
			return err
		}
	}
}
