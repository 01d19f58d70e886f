// Package curate rebuilds the context a respondent sees before user turn t
// under a chosen context strategy (full context, assistant omission, last
// turn, …), and counts what each curated context costs in tokens.
//
// A curated context is not a copy of the messages: it is a short list of
// Parts, most of which point at an original message by index. A run holds a
// context for every (conversation, turn, strategy), and copying the full
// prefix C_t for each would grow with the square of the conversation length;
// references keep the stored form small and let Materialize rebuild the exact
// messages when a prompt is sent or a dataset is exported.
//
// Token totals come from a per-conversation TokenCache that tokenizes each
// original message once; strategies add those counts up with prefix sums, so
// curating every turn of a conversation costs about one pass of the
// tokenizer over it.
//
// The deterministic strategies (fc, ao, lt, de, concat, filler) need only
// the conversation. The model-backed ones need an analyze.Analyzer in
// Options: the AC3 operators augment, reset, gated-reset and rewrite
// (strategy_ac3.go; one analysis per turn is shared by every operator of a
// conversation through the TokenCache; ac3_templates.go holds the settings
// that change what they write: reset template, rewrite variant, replay) and
// sum (strategy_sum.go). ao's strings are AOOptions; HuangAO reproduces
// Huang et al.'s. adaptive
// (strategy_adaptive.go, policy.go) chooses fc or ao per turn from the
// classify stage's turn types or a fitted policy, and the +constraints
// overlay (overlay_constraints.go) appends the constraints stage's registry;
// both read other stages' units through UnitSource. The stage curates turns
// from `from` on, or only the last K of each conversation
// (Stage.WithLastTurns: a replay of a simulated trajectory's final turn, a
// stitched instance's probe), the operators then starting at the first kept
// turn. Model-backed contexts
// carry an Info record (ac3_info.go) of what was decided and what it cost;
// report.go summarizes those records for the report. Model calls themselves
// live in stages/analyze; this package never reads files, and touches the
// ledger only through UnitSource.
package curate
