// Package annotator is the core the model-backed annotation stages
// (classify, constraints, pollution) share, so each of them keeps only its
// prompt, its answer format and checks, its heuristics and its record.
//
// It holds the annotator settings (LLM: client, role, retries, clip) and the
// variant version they make; the tagged transcript of C_t that classify and
// pollution show the model (History, RenderTranscript, RenderHistory, Clip)
// and the rendering of any other prompt with the answer's form (Render);
// and Unit, which makes one unit's call: it asks the model, reads the JSON
// answer from the section tagged with the prompt's nonce (so text inside a
// conversation cannot pose as the answer), asks afresh after a malformed
// answer, offsets the draw by pipeline.Task.Retry, and turns a per-unit
// failure into a failed unit that keeps the raw answer. Transcripts label
// messages by side and round and take their nonce from the whole
// conversation, so one turn's prompt begins with the transcript the turn
// before showed and a provider's prompt cache can serve it (issue 33); the
// tags that count back from u_t, and the answer's form, come after the
// transcript. A stage declares
// its call once as an Ask (render, check, answer length), which gives its
// prompts, units and forecast calls.
//
// The stage wiring they share is here too: one result per variant
// (Results), units of a rule-based annotator (RuleUnits) and of the model
// through the engine's window (ModelUnits), the estimate of the model
// variant (Estimate), the window and prompts of an optional model
// annotator (LLM.Window, LLM.Prompts); and for the summaries, the counts of
// done and failed units, conversations and annotators (Tally) and shares
// with their Wilson interval (Share).
//
// What is not here: prompts, answer formats, checks, heuristics and
// records, which stay in each stage's package.
package annotator
