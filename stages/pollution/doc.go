// Package pollution is the "pollution" annotation stage: for each assistant
// turn from round 2 on it says whether the reply carries over an earlier
// mistake from the conversation (context pollution, DESIGN.md §2), in which
// category, from which earlier turns, how sure the annotator is and why.
//
// Categories: intent_override (an earlier reading of what the user wants
// overrides what they now ask), code_carryover (faulty code from an earlier
// reply is reused), factual_hallucination_carryover (an invented fact is
// repeated), reasoning_trace_carryover (a wrong line of reasoning is
// continued), formula_carryover (a wrong formula or derivation is reused).
// Sources are distances back from round t, as in classify: "1a" is a_{t-1},
// "2u" is u_{t-2}.
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
