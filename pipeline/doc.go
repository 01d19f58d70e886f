// Package pipeline is the engine that runs a stage over every conversation of
// a run: it plans the tasks that are not yet done, feeds them through a
// bounded pool of workers, and commits finished tasks to the ledger in
// batches. Backpressure is by bounded channels: a slow stage (a model endpoint
// at its rate limit) slows the planner instead of filling memory.
//
// Stopping is in two steps. Closing Options.Stop (the first Ctrl-C) stops
// planning; in-flight tasks finish and are committed. Cancelling the context
// (the second Ctrl-C) abandons in-flight tasks; they were never recorded, so
// they are simply pending on the next run. Only committed work counts as done,
// which is what makes kill -9 safe.
//
// A stage that calls a model also implements Estimator, so a dry run can ask
// it what a run would cost without running it.
//
// # Layers
//
// Imports go one way, downwards; deps_test.go holds the table of every
// allowed import and fails on any other:
//
//	cmd/ac3                 flags, help, printing, exit status
//	   │
//	pipeline/run/config     the config file → a run.Plan
//	pipeline/run            Execute(plan) and Estimate(plan): the library entry point
//	   │
//	judge/report            reports and exports: above everything they summarise
//	pipeline/export
//	   │
//	judge                   pairwise judging of respond's answers
//	   │
//	stages/*                classify, constraints, pollution, curate (+ analyze),
//	   │                    respond, filter: never a reader, writer, judge or report
//	pipeline                the engine, Stage and Estimator
//	pipeline/ingest         input files → the run; pipeline/convert: files → a file
//	   │
//	io/*                    one package per format (jsonl, parquetio, arrowipc,
//	   │                    wildchat, ...), detect, compress, atomicfile
//	pipeline/ledger         the run file (SQLite)
//	pipeline/llm            the model client (+ parse, llmtest)
//	pipeline/tokens, prompt, progress
//	   │
//	pipeline/conv           domain types (standard library only); io/record,
//	                        a read record or a bad one
//	pipeline/stats          statistics: a leaf that stages, judge and report use
//	migrations              the ledger's embedded SQL
package pipeline
