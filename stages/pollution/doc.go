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
// Only a model annotates pollution (variant "llm"); there is no rule-based
// baseline, so without an endpoint the stage is skipped, never faked.
//
// Generated turns. The annotator judges an Input: the history before the
// reply (taken from the conversation up to and including u_t) and the reply
// text itself, passed separately, with an Origin naming where the reply came
// from. The stage builds Inputs from the dataset's own assistant turns
// (Origin "dataset"). A later stage that generates replies (respond) builds
// the same Input with its generated text and Origin set to the strategy
// that produced it, calls LLM.Annotate, and stores the Label in its own
// units; the prompt, parser and output format are shared, so dataset and
// generated turns are annotated alike.
package pollution
