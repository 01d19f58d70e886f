// Package classify is the "classify" annotation stage: for every user turn
// t >= 2 it says what kind of turn it is and which earlier turns it leans on.
//
// The kinds follow the turn taxonomy in DESIGN.md §2:
//
//   - new_ask: a fresh, self-contained request;
//   - feedback: concrete, actionable feedback on an earlier assistant answer
//     (a correction, an error report, "do X instead");
//   - no_feedback: refers back without concrete feedback, or continues and
//     adds information ("continue", "what about the second one?").
//
// Referenced turns ("refs") are distances back from turn t, tagged with the
// side: "1a" is a_{t-1}, "1u" is u_{t-1}, "3u" is u_{t-3}; an empty list means
// the turn stands on its own. Refs share the classify call, so there is no
// separate refs stage.
//
// Two annotators produce the same Label: the LLM annotator (variant "llm"),
// which sees C_t (everything up to and including u_t) and answers inside a
// nonce-tagged section so text pasted into a conversation cannot pose as its
// answer; and Heuristic (variant "heuristic"), a rule-based baseline on
// lexical cues that needs no model. Label.Annotator says which one wrote a
// label ("llm:<model>" or "heuristic").
//
// The heuristic abstains: where its rules do not clearly apply (a message
// in another language, cues missing or pointing two ways) it stores the
// type Unknown, which is not a turn type. Its measured quality on held-out
// real WildChat turns (coverage, accuracy where it answers, macro-F1, the
// majority-class baseline) is HeuristicQuality, data checked by a test
// against fixtures/labelled, for reports to print beside its shares.
//
// Also here: Decode and Fields for exports, Summarize for reports, and the
// labelled-set evaluation (ReadExamples, ReadConversationSet, Evaluate,
// MeasureQuality) behind `ac3 eval-heuristics`.
// What is not here: the CLI (cmd/ac3/annotate.go) and storage (the engine
// stores the units Stage returns).
package classify
