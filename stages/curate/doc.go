// Package curate rebuilds the context a respondent sees before user turn t
// under a chosen context strategy (full context, assistant omission, last
// turn, …), counts what each curated context costs in tokens, and runs the
// strategies as the curate stage.
//
// A curated context is not a copy of the messages: it is a short list of
// Parts, most of which point at an original message by index (package
// curated has the Context and Part types, the Info record and the stored
// form). A run holds a context for every (conversation, turn, strategy), and
// copying the full prefix C_t for each would grow with the square of the
// conversation length; references keep the stored form small and let
// Context.Materialize rebuild the exact messages when a prompt is sent or a dataset
// is exported.
//
// The strategies of one conversation share a Workspace (workspace.go): it
// tokenizes each original message once, and strategies add those counts up
// with prefix sums, so curating every turn of a conversation costs about one
// pass of the tokenizer over it; it also keeps the model-backed strategies'
// shared work.
//
// The deterministic strategies (fc, ao, lt, de, concat, filler; files
// strategy_*.go) need only the conversation. The model-backed ones need an
// analyze.Analyzer in Options: the AC3 operators augment, reset, gated-reset
// and rewrite (gatedreset.go; gate.go has their gate, gatedreset_templates.go
// the settings that change what they write: reset template, rewrite variant,
// replay; gatedreset_texts.go their texts; analysis.go the one analysis per
// turn every operator of a conversation shares) and sum (strategy_sum.go).
// ao's strings are AOOptions; HuangAO reproduces Huang et al.'s. adaptive
// (strategy_adaptive.go) chooses fc or ao per turn from the classify stage's
// turn types or a policy fitted by package policy, and the +constraints
// overlay (overlay_constraints.go) appends the constraints stage's registry;
// both read other stages' units through UnitSource (upstream.go).
//
// The stage (stage.go) curates turns from `from` on, or only the last K of
// each conversation (Stage.WithLastTurns: a replay of a simulated
// trajectory's final turn, a stitched instance's probe), the operators then
// starting at the first kept turn. With the AC3 memory (package memory), an
// offline cheatsheet's learning split is left out (learning_split.go), and
// OnlineStage (online_stage.go) brings the online cheatsheet up to each
// conversation before curating it. estimate.go is the stage's dry-run
// estimate and rounds.go its batch rounds.
//
// Model-backed contexts carry a curated.Info record of what was decided and
// what it cost; package tally sums those records up for the report, and
// package inspect lays contexts out for 'ac3 inspect'. Model calls
// themselves live in stages/analyze; this package never reads files, and
// touches the ledger only through UnitSource.
package curate
