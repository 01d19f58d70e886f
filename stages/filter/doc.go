// Package filter selects the conversations a run works on, following the
// WildChat protocol of Huang et al.: one language, a range of user turns, and
// a technical topic found by the keyword lists of their appendix A.1; plus
// the usual hygiene of dropping flagged and oversized records.
//
// A Filter is built once from Options and its Check is called on every
// conversation. Check returns the first failing filter as a stable Reason (see
// Check for the order); the engine stores the reason so reports can show a
// funnel. Deduplication and sampling live elsewhere (ingest and the
// pipeline); ReasonDuplicate is defined here only so all reasons share a list.
//
// Language. Options.Languages is compared, ignoring case, with the
// conversation's language, named as WildChat's field names it ("English");
// ISO 639 codes are mapped to those names. Where the input has the field
// (WildChat) it is used as it is; where it has none (ShareGPT, OpenAI chat,
// LiC) Label identifies the language of the user turns with a trigram
// language identifier (whatlanggo; see Identify and Options.IdentifyLanguage
// for what it reads and when) and records that it did, with the detector
// and its confidence, on the conversation. Apply labels and checks in one
// call, for ingest, convert and the dry run alike. A conversation whose
// language stays unknown (no user text with letters in it, or
// IdentifyNever) passes the filter under the default UnknownKeep policy,
// and LanguageKnown lets the caller count how many there were, so the
// report can say that they went through unchecked.
//
// Domains. Keywords are matched in user messages only, ignoring ASCII case,
// at word boundaries: "cell" does not match "excellent" or "cellular", and
// "java" does not match "javascript". Word bytes are ASCII letters, digits,
// '_' and '+'; anything else, every byte of a non-ASCII character included,
// is a boundary, so keywords are found inside CJK text without spaces. A
// phrase matches with any run of boundary bytes between its words ("fairy
// tale", "fairy-tale"). The last word may take a plural ending: "s", "es", or
// "ies" for a final consonant-y ("studies"); no other inflection is matched.
//
// Why user messages only: the papers select conversations by their topic, and
// the user is the one who sets it. Assistant replies are several times longer
// (scanning them would cost more) and full of generic words such as "code",
// "function" or "example" whatever the topic; counting them would also let
// the assistant's own words decide which conversations are studied, the very
// anchoring this project measures. The system message is not scanned either:
// it is set by the operator, not the user.
//
// Speed. All keywords are compiled once per process into one Aho–Corasick
// automaton with word boundaries built into the table; a scan reads each byte
// once with two table loads and stops at the first wanted domain. Check does
// not allocate. Classify scans everything and returns all matching domains,
// for metadata.
//
// Near duplicates. Near computes what ingest --dedupe near needs: a MinHash
// signature of a conversation's user turns (word shingles, 128 minimums,
// github.com/dgryski/go-minhash over xxh3) and its LSH band keys; Similarity
// estimates the Jaccard similarity of two signatures. The index that finds
// candidates is in the run file (pipeline/ledger), so that its memory does
// not grow with the run; see NearOptions for the defaults and why.
package filter
