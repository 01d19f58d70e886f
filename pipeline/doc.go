// Package pipeline is the engine that runs a stage over every conversation of
// a run: it plans the tasks that are not yet done, runs them, and commits
// finished tasks to the ledger in batches. Tasks and a task's units run in
// bounded pools (sourcegraph/conc) fed from bounded channels: a slow stage
// (a model endpoint at its rate limit) slows the planner instead of filling
// memory.
//
// Two bounds limit the work open at once, one per resource.
// Options.Workers is for CPU-bound stages: that many tasks run at once, one
// per core by default (the user's --workers). A model-backed stage (a
// ModelStage) keeps its window of tasks open, and as many of their units may
// be in flight, sent or queued at the llm client's limiter; the endpoint's
// own concurrency, RPM and TPM limits, enforced by the client, decide what
// is actually sent, and the window is derived from them (DefaultWindow:
// twice the concurrency; Options.Window overrides it for tests and library
// callers), so an endpoint that answers in seconds is kept busy
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
// # Inside pipeline
//
// pipeline/ is the ground of the tree: the folders above it are drawn in
// the module root's doc.go. Within it, from the bottom up (deps_test.go
// holds the row of every package):
//
//	conv, stats, llm/parse,   leaves: the domain types, statistics, output
//	shard, memgov, progress,  parsing, shard hashing, the memory governor,
//	synth                     progress lines, synthetic conversations
//	record, prompt, tokens    on conv: a read record or a bad one, prompt
//	                          templates, token counts
//	llm (+ llmtest)           the model client and its test endpoint
//	ledger (+ pagesum)        the run file, with page checksums
//	llm/batch, ingest         batch APIs and input files, into the run file
//	pipeline                  the engine: plan, run, commit, stop
package pipeline
