package run

import (
	"context"
	"fmt"
	"strconv"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/run/export"
	"github.com/ac3/ac3/run/report"
)

// ExportFormat checks that what is a kind of export that can be written in
// format, and returns the format.
func ExportFormat(what, format string) (export.Format, error) {
	f, err := export.ParseFormat(format)
	if err != nil {
		return "", err
	}
	return f, export.CheckKind(what, f)
}

// ExportFileName is the file name an export of what as format gets when
// its config entry gives no out path (see export.FileName).
func ExportFileName(what, format string) string { return export.FileName(what, format) }

// runSeed is the seed the run's judge recorded (0 when none).
func runSeed(ctx context.Context, l *ledger.Ledger) (uint64, error) {
	v, ok, err := l.Meta(ctx, MetaSeed)
	if err != nil || !ok {
		return 0, err
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("reading the run seed %q: %w", v, err)
	}
	return uint64(n), nil
}

func (r *runner) report(ctx context.Context) (bool, error) {
	rp := r.plan.Report
	if rp == nil {
		return true, nil
	}
	if r.stopped() {
		return false, nil
	}
	r.heading("report (%s)", rp.Out)
	ctx, cancel := UntilStop(ctx, r.opts.Stop)
	defer cancel()
	opts := rp.Options
	if rp.SeedFromRun {
		var err error
		if opts.Seed, err = runSeed(ctx, r.l); err != nil {
			return false, err
		}
	}
	rep, err := report.Build(ctx, r.l, opts)
	if err != nil {
		if r.stopped() {
			return false, nil
		}
		return false, fmt.Errorf("building report: %w", err)
	}
	return r.wroteReports(report.Write(rp.Out, rep, rp.Formats))
}

// wroteReports logs the files a report step wrote and adds them to the
// run's result, or passes on its error; the report and the LiC accuracy
// step finish alike.
func (r *runner) wroteReports(paths []string, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	for _, p := range paths {
		r.logf("wrote %s\n", p)
	}
	r.res.Reports = append(r.res.Reports, paths...)
	return true, nil
}

func (r *runner) exports(ctx context.Context) (bool, error) {
	ctx, cancel := UntilStop(ctx, r.opts.Stop)
	defer cancel()
	for _, x := range r.plan.Exports {
		if r.stopped() {
			return false, nil
		}
		r.heading("export %s (%s)", x.What, x.Format)
		f, err := ExportFormat(x.What, x.Format)
		if err != nil {
			return false, err
		}
		st, err := export.Write(ctx, r.l, x.What, f, x.Out, x.Options())
		if err != nil {
			if r.stopped() {
				return false, nil // the partial file is removed
			}
			return false, err
		}
		r.logf("%s\n", st.Summary(x.What, x.Out))
		r.res.Exports = append(r.res.Exports, Exported{What: x.What, Out: x.Out, Rows: st.Rows, Skipped: st.Skipped})
	}
	return true, nil
}
