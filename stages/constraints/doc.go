// Package constraints is the "constraints" annotation stage: it keeps the
// session-constraint registry of each conversation, turn by turn.
//
// A session constraint is a user instruction meant to keep holding for the
// rest of the session, beyond the request at hand ("show me drafts before
// sending anything from now on"). The task itself, one-off corrections and
// formatting asked for a single answer are not constraints. Each constraint
// has a canonical one-sentence form, an evidence span quoted from the user
// turn, a type (action, information, process, preference, output) and the
// turn that set it.
//
// The extractor reads the user turns in order. For turn t it gets exactly an
// Input: u_t taken from a conv.UserView (which cannot hold assistant text),
// the single previous assistant message a_{t-1} passed explicitly (only to
// resolve "do that from now on"), and the registry so far (only to avoid
// recording a constraint twice), or in the parallel form the earlier user
// turns from the same view. No other assistant text can reach it.
//
// Every user turn t >= 1 is one unit; its Record holds the constraints new at
// t and the whole registry as of t, so the registry at any turn is one read
// (RegistryAsOf), which is what curation appends to contexts. A constraint
// restated in other words is not added again; a changed constraint is added
// as a new entry (the later one wins when they conflict).
//
// Two annotators write Records: LLM (variant "llm"), whose answer sits in a
// nonce-tagged section so a user message holding a fake answer cannot pose
// as one, and Heuristic (variant "heuristic"), which looks for scope phrases
// ("from now on", "for the rest of", "always", "never", "don't … until",
// "going forward", "every time", ...) and guesses the type from cue words.
//
// The llm variant has two forms (Options.Registry), told apart by version.
// The sequential one, above, is the paper's: turn t's request holds the
// registry the answers for turns < t built, so a conversation of N user
// turns takes N batch rounds. The parallel one (Proposer) asks every turn
// at once: its Input shows u_t, a_{t-1} and the earlier user turns instead
// of the registry, each answer says which earlier turn a constraint repeats
// or revises, and Consolidate folds the answers into the registries without
// a model. A revision replaces the constraint it changes, where the
// sequential form keeps both. Unless told, the stage runs the parallel form
// when the annotator role is in batch mode and the sequential form online.
//
// Also here: Decode and Fields for exports, Summarize for reports, and the
// labelled-set evaluation behind `ac3 eval-heuristics`.
package constraints
