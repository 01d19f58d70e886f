package pipeline

import (
	"context"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
)

// Variant is one configured variant of a stage (a strategy, a pair, an
// annotator) and the version of its settings and prompts. The version goes
// into every unit key, so changing a variant's settings makes only its own
// work pending again.
type Variant struct {
	Name    string
	Version string
}

// Task is the pending variants of a stage over one conversation. Variants
// come together so a stage can share per-conversation work between them (each
// message tokenized once for every strategy; one AC3 analysis for every
// operator); each variant's result is still recorded on its own.
type Task struct {
	Seq  int64 // the conversation's position in the run
	Conv *conv.Conversation
	// Origin is ledger.OriginSource for an ingested conversation, else the
	// step that derived it; Parent is the seq it was derived from (0: none).
	Origin   string
	Parent   int64
	Variants []Variant
	// Retry counts how many times `ac3 retry` re-queued this stage's failed
	// work. A model-backed stage offsets its re-ask counter (llm.Request
	// Reroll) by it, so a retried unit asks afresh instead of replaying the
	// malformed answers the cache already holds.
	Retry int

	// run is the engine's state the task's units share (the model window
	// and the stop signal); nil for a task built outside Run.
	run *runState
}

// Result is what a stage produced for one variant of a task.
type Result struct {
	Variant Variant
	Units   []Unit
}

// Unit is the result of one unit of work (one turn) of a task.
type Unit struct {
	Turn     int
	Failed   bool
	Attempts int
	Error    string // why the unit failed
	Raw      string // a model's raw answer kept for inspection when it failed to parse
	Output   []byte // the stage's result, in the stage's own encoding
	Tokens   int64  // a size the reports sum (context tokens, generated tokens)
}

// Stage is a step that turns each conversation into units of work. A stage
// is a pure function of its inputs (plus model calls, which the llm package
// caches); it writes nothing itself — the engine stores what it returns.
type Stage interface {
	// Name is the stage's name in unit keys, status and exports.
	Name() string
	// Variants lists the variants to run, with their current versions.
	Variants() []Variant
	// Process runs one task and returns one Result per variant of the task,
	// in any order. A unit that fails (a malformed model answer after
	// retries, a rejected request) is returned with Failed set; a non-nil
	// error means the whole run must stop (a bad API key, a bug). Process
	// must return promptly once ctx is cancelled.
	Process(ctx context.Context, t Task) ([]Result, error)
}

// ModelStage is a Stage whose units wait on model endpoints rather than on
// the CPU. Run keeps Options.Window of its tasks open, and lets as many of
// its units be in flight (see Task.Each), instead of Options.Workers: one
// conversation per core would leave an endpoint that answers in seconds
// almost idle.
type ModelStage interface {
	Stage
	// ModelWindow is the window that keeps the endpoints the stage calls
	// busy, normally DefaultWindow of its client and roles. It is 0 when
	// this configuration of the stage makes no model call (every variant is
	// rule-based or deterministic); Run then treats it as CPU-bound.
	ModelWindow() int
}

// ChainStage is a Stage with a step that carries state from one
// conversation to the next in ingest order (a memory that learns as the run
// goes). Run calls Chain for one task at a time, in ingest order, and runs
// the work Chain returns concurrently with the Chain calls of later tasks,
// so the chain stays deterministic while the rest of the work fills the
// window.
type ChainStage interface {
	Stage
	// Chain runs the part of task t that depends on the tasks before it and
	// returns the rest, which depends on t alone. An error stops the run as
	// a Process error does. Process must still do both parts in one call;
	// Run calls Chain instead of Process, so a wrapper that changes what
	// Process does must wrap Chain too.
	Chain(ctx context.Context, t Task) (rest func(ctx context.Context) ([]Result, error), err error)
}

// Scoped is a Stage that runs over the conversations of some origins only:
// a simulator that turns ingested tasks into trajectories must never run
// over the trajectories it made. A stage that is not Scoped runs over every
// origin. The run can narrow a stage's scope further (Options.Scope, from
// its config's `on:`), never widen it; see StageScope.
type Scoped interface {
	Stage
	// Scope is the origins the stage can run over.
	Scope() ledger.Scope
}
