// Package analyze is the AC3 analyzer: the model calls that decide how a
// conversation's context should be curated before the assistant's turn t.
//
// Two steps make up an analysis (Ho et al., AC3):
//
//  1. Specification extraction (Analyzer.Specify) reads the system message
//     and the user messages u_1..u_t and writes one consolidated, current
//     task specification. Its only input is a conv.UserView, a type that
//     cannot hold assistant or tool text, so the assistant's own words never
//     reach this step. That is deliberate: an extractor that sees the
//     assistant's earlier turns is anchored by them and can end up worse than
//     no intervention, and telling it to ignore them does not help.
//  2. Approach evaluation (Analyzer.Evaluate) reads the specification, the
//     full context C_t and, optionally, a memory cheatsheet, and reports what
//     the assistant got right ("aligned") and what contradicts the
//     specification or rests on assumptions the user never made ("issues",
//     "None" when there is nothing). As in the paper's step 2, it reviews
//     critically and requirement by requirement: each requirement is done
//     (kept in aligned with its concrete result, even when others must be
//     redone), wrong or still open (named in issues); a requirement first
//     stated in the latest user message is neither. Every preset uses this
//     form; an issues section listing None for every requirement counts as
//     None.
//
// Two ablations reproduce the paper's contagion result and are off unless a
// caller asks for them by name: AblationContagiousExtractor lets step 1 see
// the whole conversation, AblationSinglePass does the whole analysis in one
// call over the whole conversation. Every Analysis they produce says so.
//
// The package also holds the other AC3 model calls the curation operators
// and the optional memory need: Rewrite (a new context written from an
// analysis, with our prompt or the paper's; see RewriteVariant), Summarize (one sentence per assistant reply, for the sum
// strategy), and Reflect/Unify (the memory cheatsheet). Prompts are embedded
// files under prompts/ and their versions go into Version, so a prompt edit
// changes the unit keys of the work it affects.
//
// Every answer is read from nonce-tagged sections (see llm/parse.Tagger), so
// text pasted into a conversation cannot pose as a field of the analysis.
// Nothing here touches the ledger; stages/curate turns analyses into curated
// contexts and the engine stores them.
package analyze
