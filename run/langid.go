package run

import (
	"context"
	"runtime"
	"sync"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ingest"
	"github.com/ac3/ac3/pipeline/record"
	"github.com/ac3/ac3/stages/filter"
)

// Language identification costs about half a millisecond of CPU per
// conversation (stages/filter.Identify), several times what ingest spends
// on one otherwise, and ingest and the dry run read their records on one
// goroutine. labelAhead therefore labels the records a batch at a time on
// every core before they reach that goroutine, where the filter's Apply then
// finds the work done (Label does nothing twice). Convert needs none of
// this: it filters on all cores already.
const (
	labelBatch      = 256     // records labelled at once
	labelBatchBytes = 4 << 20 // and at most this many bytes of them
)

// labelAhead returns rd with the languages of its records labelled as f's
// filter labels them, ahead of the reader's caller and in parallel. The
// first skip records (those a resumed ingest or dry run passes over) and
// those owns rejects (another shard's) are not labelled. When the filter
// identifies nothing (see filter.Filter.Identifies) rd is returned as it is.
func (f Filter) labelAhead(rd record.Reader, skip int64, owns func(id string) bool) record.Reader {
	flt, err := filter.New(f.Options())
	if err != nil || !flt.Identifies() {
		return rd // the filter's error is the caller's to report (keep)
	}
	return &labelReader{Reader: rd, label: flt.Prelabel, owns: owns, skip: skip, workers: runtime.GOMAXPROCS(0)}
}

// labelling wraps open so that ingest reads each file through labelAhead,
// passing over the records the run has of it already.
func (r *runner) labelling(open ingest.Opener, f Filter) ingest.Opener {
	return func(ctx context.Context, path string) (record.Reader, string, error) {
		rd, format, err := open(ctx, path)
		if err != nil {
			return rd, format, err
		}
		var skip int64
		in, known, err := r.l.Input(ctx, path)
		if err != nil {
			rd.Close()
			return nil, "", err
		}
		if known {
			skip = in.RecordsDone
		}
		return f.labelAhead(rd, skip, r.owns()), format, nil
	}
}

// labelReader is a record.Reader that reads labelBatch records at a time
// from the reader it wraps and labels their languages on workers
// goroutines before handing them out in order. It holds one batch.
type labelReader struct {
	record.Reader
	label   func(*conv.Conversation)
	owns    func(id string) bool
	skip    int64 // records still to pass on unlabelled
	workers int

	buf  []record.Record
	next int
	err  error // what the wrapped reader returned after buf's records
}

// Next returns the next record, labelled; it blocks while a batch is read
// and labelled, and returns the wrapped reader's error (io.EOF at the end)
// once the records before it are handed out.
func (r *labelReader) Next(ctx context.Context) (record.Record, error) {
	if r.next == len(r.buf) {
		if r.err != nil {
			return record.Record{}, r.err
		}
		r.fill(ctx)
		if len(r.buf) == 0 {
			return record.Record{}, r.err
		}
	}
	rec := r.buf[r.next]
	r.buf[r.next] = record.Record{} // the caller owns it now
	r.next++
	return rec, nil
}

// fill reads the next batch and labels it.
func (r *labelReader) fill(ctx context.Context) {
	r.buf, r.next = r.buf[:0], 0
	var bytes int
	var todo []*conv.Conversation
	for len(r.buf) < labelBatch && bytes < labelBatchBytes {
		rec, err := r.Reader.Next(ctx)
		if err != nil {
			r.err = err
			break
		}
		r.buf = append(r.buf, rec)
		c := rec.Conv
		if c != nil {
			bytes += c.Size()
		}
		switch {
		case r.skip > 0:
			r.skip--
		case c == nil, r.owns != nil && !r.owns(c.ID):
		default:
			todo = append(todo, c)
		}
	}
	if len(todo) <= 1 || r.workers <= 1 {
		for _, c := range todo {
			r.label(c)
		}
		return
	}
	var wg sync.WaitGroup
	w := min(r.workers, len(todo))
	for k := range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := k; i < len(todo); i += w {
				r.label(todo[i])
			}
		}()
	}
	wg.Wait()
}
