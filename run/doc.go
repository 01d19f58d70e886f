// Package run is the library entry point of ac3: it runs a whole plan — a
// config file's worth of work — against one run file, or forecasts what
// that would cost without running it.
//
//	res, err := run.Execute(ctx, plan, run.Options{Stop: stop, Log: os.Stdout})
//	fc, err := run.Estimate(ctx, plan)
//
// A Plan is plain data: input files and filters, which stages run with which
// settings, the models, the report and the exports. The command line builds
// one from its config file or flags; tests and a shard worker can build one
// directly. Execute runs the steps in order (ingest, annotate, curate,
// respond, judge, report, exports), each resuming where an earlier run
// stopped, and returns a Result saying what each stage did, what failed and
// whether the run stopped early. Finish turns that into the exit status the
// manual promises (ExitFailed, ExitStopped, ...) and its closing line, and
// OnSignals keeps the promise on Ctrl-C (stop.go); the command line only
// maps the status to the process's.
//
// Estimate asks each stage of the plan for its forecast
// (pipeline.Estimator) conversation by conversation, so it needs no more
// memory for a million conversations than for ten.
//
// The package sits on top of every other: it wires stages, the judge, the
// report and the exports together, and nothing but the command line imports
// it (the layers are drawn in the module root's doc.go). It takes a Plan of
// option structs; reading a config file into one is run/config's job.
package run
