// Package annotator is the core the model-backed annotation stages
// (classify, constraints, pollution) share, so each of them keeps only its
// prompt, its answer format and its checks.
//
// It holds the annotator settings (LLM: client, role, retries, clip) and the
// variant version they make; the tagged transcript of C_t that classify and
// pollution show the model (History, RenderTranscript, Clip); and Unit, which
// makes one unit's call: it asks the model, reads the JSON answer from the
// section tagged with the prompt's nonce (so text inside a conversation
// cannot pose as the answer), asks afresh after a malformed answer, offsets
// the draw by pipeline.Task.Retry, and turns a per-unit failure into a failed
// unit that keeps the raw answer.
//
// What is not here: prompts, answer formats and stage wiring, which stay in
// each stage's package.
package annotator
