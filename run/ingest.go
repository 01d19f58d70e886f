package run

import (
	"context"
	"errors"
	"strings"

	"github.com/ac3/ac3/io/arrowipc"
	"github.com/ac3/ac3/io/detect"
	"github.com/ac3/ac3/io/parquetio"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ingest"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/progress"
	"github.com/ac3/ac3/pipeline/record"
	"github.com/ac3/ac3/stages/filter"
)

// keep is the filter as ingest, convert and the dry run apply it: the
// language labelled (identified where the input has none), then checked.
func (f Filter) keep() (ingest.Keep, error) {
	flt, err := filter.New(f.Options())
	if err != nil {
		return nil, err
	}
	return func(c *conv.Conversation) (bool, string) {
		ok, r := flt.Apply(c)
		return ok, string(r)
	}, nil
}

// opener opens input files of format ("auto" sniffs each), with the
// Parquet and Arrow readers; lines longer than maxLine are quarantined.
func opener(format string, maxLine int) ingest.Opener {
	return func(ctx context.Context, path string) (record.Reader, string, error) {
		return detect.Open(ctx, path, detect.Options{
			Format:       format,
			MaxLineBytes: maxLine,
			OpenParquet:  parquetio.OpenReader,
			OpenArrow:    arrowipc.OpenReader,
		})
	}
}

func (r *runner) ingest(ctx context.Context) (bool, error) {
	in := r.plan.Ingest
	if in == nil {
		return true, nil
	}
	r.heading("ingest (%d files)", len(in.Files))
	keep, err := in.Filter.keep()
	if err != nil {
		return false, err
	}
	near, err := in.Filter.nearDedupe()
	if err != nil {
		return false, err
	}
	m := progress.Start(r.progress(), "ingest", "records", 0)
	sum, err := ingest.Run(ctx, r.l, in.Files, ingest.Options{
		Open: r.labelling(opener(in.Format, in.MaxLineBytes), in.Filter), Keep: keep, Dedupe: in.Filter.dedupes(), Near: near,
		Settings: in.Filter.Canonical(), Stop: r.opts.Stop,
		Owns: r.owns(), SkipBad: r.plan.Shard.Enabled() && r.plan.Shard.Index != 0,
		OnBatch: func(_ string, n int64, _ ledger.IngestResult, _ int) { m.Add(n, 0) },
	})
	m.Stop()
	r.logIngest(sum, err != nil)
	if err != nil {
		return false, err
	}
	return !sum.Stopped && !r.stopped(), nil
}

// logIngest prints what ingest read, file by file. failed: it ended with an
// error, which the last file met; that file is said to be unfinished, so
// its counts are not taken for a whole file's.
func (r *runner) logIngest(sum ingest.Summary, failed bool) {
	var kept, bad, dropped int64
	drops := map[string]int64{}
	for i, f := range sum.Files {
		switch {
		case f.Skipped:
			r.logf("%s: already ingested, skipped\n", f.Path)
			continue
		case f.Resumed > 0:
			r.logf("%s (%s): resumed after record %d; ", f.Path, f.Format, f.Resumed)
		default:
			r.logf("%s (%s): ", f.Path, f.Format)
		}
		var d int64
		for k, v := range f.Dropped {
			drops[k] += v
			d += v
		}
		unfinished := ""
		if failed && i == len(sum.Files)-1 && !f.Finished {
			unfinished = "; stopped by the error below, the file is not done"
		}
		r.logf("%d records, %d kept, %d dropped, %d quarantined%s\n", f.Records, f.Kept, d, f.Bad, unfinished)
		kept, bad, dropped = kept+f.Kept, bad+f.Bad, dropped+d
	}
	so := ""
	if failed {
		so = " so far"
	}
	r.logf("kept %d conversations%s; dropped %d; quarantined %d\n", kept, so, dropped, bad)
	if dropped > 0 && r.opts.Log != nil {
		WriteCounts(r.opts.Log, "dropped by reason", drops, dropped)
	}
	if drops[ledger.DropNearDuplicate] > 0 {
		r.logf("near duplicates and the kept conversations they matched: 'ac3 export --what duplicates'\n")
	}
	if bad > 0 {
		r.logf("quarantined records: see 'ac3 status' or 'ac3 export --what quarantine'\n")
	}
	if sum.Stopped {
		r.logf("stopped before the end; run the same command again to continue\n")
	}
}

// FilterError renames the option a filter error is about with names,
// which maps the filter's option names (filter.FieldError.Field) to what
// the user wrote: flags for the command line, keys for a config file.
// Other errors are returned as they are.
func FilterError(err error, names map[string]string) error {
	var fe *filter.FieldError
	if !errors.As(err, &fe) {
		return err
	}
	var msgs []string
	for _, e := range unjoin(err) {
		if errors.As(e, &fe) {
			name := names[fe.Field]
			if name == "" {
				name = fe.Field
			}
			msg := fe.Msg
			for field, n := range names {
				msg = strings.ReplaceAll(msg, field, n)
			}
			msgs = append(msgs, name+": "+msg)
			continue
		}
		msgs = append(msgs, e.Error())
	}
	return errors.New(strings.Join(msgs, "; "))
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
