// Package pollution is the "pollution" annotation stage: for each assistant
// reply from round 2 on it says whether the reply is polluted by the
// assistant's own earlier replies in the conversation (context pollution,
// DESIGN.md §2; Huang et al.), in which category, from which earlier
// replies, how sure the annotator is and why.
//
// Categories (prompts/pollution.tmpl words them for the model):
//   - intent_override: the reply keeps to the plan, story, assumption or
//     kind of answer of an earlier reply and so misses what the latest user
//     message asks or changes;
//   - code_carryover: code from an earlier reply reappears where it does not
//     belong (a bug, an invented API or argument, settings of another
//     library), or an earlier language's syntax leaks in after the user
//     switched languages;
//   - factual_hallucination_carryover: a false statement an earlier reply
//     made is repeated or built on;
//   - reasoning_trace_carryover: the verbose manner or stylistic habits of
//     earlier replies are copied or amplified (not flawed reasoning as such:
//     a wrong claim carried forward takes the category of its content);
//   - formula_carryover: an earlier formula is reused wrongly, whether it was
//     wrong from the start or right but applied where it does not hold.
//
// Sources are earlier assistant replies as distances back from round t
// ("1a" is a_{t-1}); a polluted label names at least one, and a user
// message is never a source.
//
// Only a model annotates pollution; there is no rule-based baseline, so
// without an endpoint the stage is skipped, never faked.
//
// Which replies. Variant "llm" (VariantDataset) reviews the dataset's own
// assistant turns. Variants "responses:<respond variant>" (ResponsesVariant)
// review the replies the respond stage generated under each strategy, one
// label per sample, stored as Generated; see ResponseOptions for what the
// annotator sees and why. A generated reply that cannot be reviewed
// (respond's unit missing, failed or stale) gives a failed unit naming the
// reason, never a clean label. Both kinds share one prompt and parser, and
// the prompt never says where the reply came from.
//
// Rates folds the units of every variant into pollution rates per variant
// and category, with Wilson intervals, and exact McNemar tests between
// variants on the replies both reviewed; the dataset's rate sits beside the
// strategies'. Summarize (summary.go) is the summary of one variant.
package pollution
