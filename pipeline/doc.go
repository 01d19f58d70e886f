// Package pipeline is the engine that runs a stage over every conversation of
// a run: it plans the tasks that are not yet done, runs them, and commits
// finished tasks to the ledger in batches. Backpressure is by bounded
// channels: a slow stage (a model endpoint at its rate limit) slows the
// planner instead of filling memory.
//
// Two knobs bound the work open at once, and they limit different things.
// Options.Workers is for CPU-bound stages: that many tasks run at once, one
// per core by default. Options.Window is for model-backed stages (a
// ModelStage): that many tasks are open and that many of their units may be
// in flight, sent or queued at the llm client's limiter; the endpoint's own
// concurrency, RPM and TPM limits, enforced by the client, decide what is
// actually sent. The default window is derived from those limits
// (DefaultWindow), so an endpoint that answers in seconds is kept busy
// however few cores the machine has. A stage runs its units through
// Task.Each, concurrently where the turns are independent (classify,
// pollution, respond, judge) and one after another where each turn needs the
// one before (constraints, the AC3 operators); a ChainStage (the online
// memory) carries state across conversations in ingest order, one
// conversation at a time, while the rest of the work fills the window.
// Memory is bounded by the window or the workers, never by the run's size.
//
// Stopping is in two steps. Closing Options.Stop (the first Ctrl-C), or a
// graceful stop such as the budget, stops planning and starting units;
// units in flight finish (their answers are cached), tasks whose units all
// ran are committed, and the others stay pending. Cancelling the context
// (the second Ctrl-C) abandons in-flight tasks; they were never recorded,
// so they are simply pending on the next run. A stage error or a panic (a
// *PanicError carrying the stack) stops the run the same way and is
// returned. Only committed work counts as done, which is what makes kill -9
// safe. Results are keyed by stage, conversation, turn, variant and version,
// so the order tasks finish in never shows in an export or a report.
//
// Conversations come from ingest or from the run itself. Derive walks a
// scope's conversations in seq order and stores what a step makes of them
// (a simulated trajectory per task, instances stitched from several
// conversations) as conversations of a new origin, resumably and in a
// deterministic order; Barrier says whether the stage such a step reads is
// finished. A stage runs over the conversations of its scope: its own
// (Scoped) narrowed by the run's setting (Options.Scope); planning, Pending
// and the status Progress all count within it. Turns selects which user
// turns of each conversation a stage works on (from a turn on, or the last
// K).
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
//	pipeline                the engine, Stage and Estimator (modelstages: its
//	   │                    throughput benchmark of the model stages)
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
