// Package judge is the "judge" stage: an LLM judge compares, turn by turn,
// the answers two strategies produced (stage respond) and says which is
// better on two dimensions, quality and on_topic, each "A", "B" or "tie",
// with a one-sentence justification and a confidence when it gives one.
//
// A pair such as "gated-reset:ao" names two respond variants, A and B. Its
// stage variant is the pair, suffixed "/user_only" or "/final_answer_only"
// when the judge sees less than the full history:
//
//	full               the dataset's own conversation up to the user turn,
//	                   verbatim, and each candidate with its reasoning trace
//	                   (when it has one) shown before its answer;
//	user_only          the system message and the user turns only;
//	final_answer_only  the history with <think> traces removed from the
//	                   assistant turns, and candidates' answers without
//	                   their reasoning.
//
// Position bias. Order "random", the default, shows A first or second as
// drawn from a hash of the run seed, the conversation, the turn, the pair
// and the sample; the seed and the draw are stored with the verdict, so the
// ledger says what the judge saw. It is the protocol of both papers (the AC3
// paper and Huang et al. judge each pair once in a seeded random order), so
// its win rates are comparable with theirs. Order "both" is the stricter
// option at twice the calls: it judges every comparison once in each order;
// a strategy wins only when it wins in both, anything else is a tie, and the
// two single-order verdicts stay stored for the order-consistency rate the
// report shows (pipeline/stats). Its win rates are pulled towards 1/2
// relative to the papers' by every comparison the two orders disagree on.
// Answers that are identical after trimming are a tie without a call.
//
// The prompt is ours (prompts/pairwise.tmpl) and its version is in every
// unit key. The judge answers inside a tag that carries a nonce derived from
// everything the prompt embeds (pipeline/llm/parse.Tagger), holding a JSON
// object; a verdict pasted inside a conversation or a candidate cannot be
// mistaken for the judge's own. The prompt is laid out for providers' prompt
// caches: one system message for every call, then the history, then the
// candidates and the verdict's form with its nonce; a turn's calls are sent
// together and turns in order, so they share the history while a cache
// still holds it.
//
// Stored output is Output as JSON; Observations turns a stored unit into one
// Observation per comparison and dimension for the statistics (pipeline/stats)
// and the report (run/report).
package judge
