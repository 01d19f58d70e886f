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
// The strategies here are the deterministic ones (fc, ao, lt, de, concat,
// filler). The Strategy interface also fits the model-backed ones (summaries,
// AC3 reset and rewrite), which keep state across the turns of a conversation
// and live with the stages that call the model. Nothing here calls a model,
// reads files or touches the ledger.
package curate
