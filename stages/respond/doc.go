// Package respond is the "respond" stage: for every curated context (one
// conversation, one user turn, one strategy) it asks the respondent role to
// write the next assistant turn, so that judge can compare what different
// strategies make a model say.
//
// The respondent sees the curated context exactly as the curate stage stored
// it, materialized against the conversation, and nothing else: no prompt of
// ours is added, because the strategy is the thing under test. Samples > 1
// draws several answers per context, each with its own llm.Request
// SampleIndex and therefore its own cache entry. Reasoning traces (reasoning
// fields or <think> blocks) are kept in their own field, never mixed into
// the answer the judge reads.
//
// Several respondents may run at once: each is a role bound to a model, and
// its variants are named strategy@label (plain strategy for the default
// respondent). The stored unit output is Output as JSON; Decode reads it.
// Options.Turns answers only some turns of each conversation (from a turn
// on, or the last K), whatever curate stored.
//
// What does not live here: curating (stages/curate), judging (judge) and
// choosing models (cmd/ac3 binds roles to endpoints).
package respond
