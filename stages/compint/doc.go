// Package compint builds and scores the CompInt evaluation of Wang et al.
// ("Lost in Compaction"): does a context strategy keep a session constraint
// (SC) that the user stated earlier in a long conversation?
//
// Everything here is pure and deterministic; the model calls and their
// storage belong to the stage that uses it. The pieces, in the order a run
// uses them:
//
//   - SCs (sc.go). A Set of SCs, each with a type, a probe request, the
//     behaviour that honours it and the one that ignores it, and its text
//     under four framings (plain, explicit, hard, explicit_hard). Default
//     returns the suite's 15, embedded; Load and Parse read a user's file of
//     the same shape and name the file, SC and field of any problem.
//
//   - Long contexts (stitch.go). A Stitcher takes ingested conversations one
//     at a time, in order, and joins their complete turns (a user message
//     and its reply) into contexts of a target token length, counted with
//     pipeline/tokens the way the endpoint bills a chat request. It appends
//     whole conversations, crops the one that would pass the cap (1.25 × the
//     target, the paper's bound) at a turn boundary, and holds only the
//     context in progress, never the input.
//     StitchTopics (topic.go) chooses the order instead, as the paper's
//     App. A.1 does: each context grows from a seed by the unused
//     conversation nearest its centroid over normalized embeddings (a
//     TopicPool holds them, float32, no text); EmbedText is the text
//     embedded. Sequential order is the fallback without an embedder.
//
//   - Instances (instance.go). A Builder expands each context into, per SC,
//     one baseline without the SC (Kind WithoutSC) and one instance per
//     location × framing (Kind WithSC), with the probe appended as the next
//     user turn. The SC goes in front of the chosen user messages (top: the
//     first, middle: the ⌊n/2⌋+1-th, bottom: the last, multi: min(r, n)
//     turns drawn with a seed), as the reference code does. An Instance is
//     a conv.Conversation with a stable id derived from what determines its
//     text, and its Meta (sources, SC, location, framing, injected turns,
//     token counts, its baseline's id) stored as {"compint": …} in the
//     conversation's Meta, so a run stores and curates it like any other
//     conversation and ReadMeta recovers the metadata. Build drives both
//     from an iterator.
//
//   - Retention (retention.go). RetentionContext cuts the probe from what a
//     strategy produced for the probe turn; RetentionMessages renders the
//     judge prompt (ours) for that context and the SC, the context before
//     the SC so that calls on contexts that begin alike share a prefix a
//     provider's prompt cache serves; ParseRetention reads
//     its YES or NO strictly from a section tagged with a nonce derived from
//     everything the prompt embeds (pipeline/llm/parse), so a verdict pasted
//     in a conversation cannot pose as the judge's. MatchEvidence is the
//     cheap check reported beside it: is the SC's wording there, exactly or
//     nearly?
//
//   - Compliance (probe.go). The probe becomes a two-option question (MCQ)
//     in one of two orders, both or one drawn from the seed per context and
//     SC and recorded; ProbeMessages turns a context ending in the probe turn
//     into the request for one of the four groups (long context with SC,
//     without SC, compacted, compacted with the SC restated before the
//     question: the upper bound, from the baseline's compacted context by
//     default (UBClean, the paper's C(H) ⊕ s) or the instance's
//     (UBInjected)); MCQ.Parse accepts only a clean A or B.
//
//   - Numbers (effect.go). Score combines an instance's orders, NewRate
//     gives a rate with its Wilson interval (pipeline/stats), and
//     EffectRetention computes (c_comp − c_lctx) / (c_ub − c_lctx) with its
//     denominator, undefined when the denominator is too small to divide by.
//
// Not here: calling the models, curating contexts (stages/curate does that
// for instances as for any conversation), storing units, and the report.
package compint
