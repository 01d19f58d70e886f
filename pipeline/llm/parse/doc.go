// Package parse turns a model's free-text answer into fields a stage can use.
//
// It knows three shapes of answer:
//
//   - reasoning traces: SplitThink separates a <think>…</think> block (or a
//     dangling </think> left by chat templates that open the block in the
//     prompt) from the answer proper;
//   - tagged sections such as <spec id="…">…</spec>: a Tagger names each
//     section with a nonce derived from the content the prompt embeds, so text
//     pasted by a user into a conversation cannot pose as a parsed field;
//   - JSON objects: JSON finds the object in an answer (fences and prose
//     around it are tolerated), decodes it, and checks required fields and
//     enumerations declared with `parse:"…"` struct tags; Schema renders the
//     same declarations as a JSON Schema for endpoints with structured output;
//     Strict is the parser for such endpoints, where the whole answer must be
//     one object with no other keys, so nothing quoted or echoed can pose as
//     it.
//
// A stage declares the fields of its answer once, as Sections (named text
// fields) or as an Object (a struct type): from that one declaration come
// the layout its prompt shows, the parser, and the strict schema, for both
// Outputs (Tags, JSONSchema). The two layouts cannot ask for different
// fields.
//
// The package imports only the standard library. It does not call models or
// retry: pipeline/llm does that and wraps the errors returned here.
package parse
