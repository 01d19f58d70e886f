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
// Subpackages hold the domain types (conv), the checkpoint store (ledger),
// the model client (llm), the token counter (tokens) and the ingest and export
// drivers.
package pipeline
