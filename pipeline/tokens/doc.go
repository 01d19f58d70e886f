// Package tokens counts tokens the way OpenAI-style models bill them, so
// curation can report what each context strategy costs and the planner can
// estimate spend before a run.
//
// A Counter wraps one tiktoken encoding (o200k_base by default). The BPE
// tables ship inside the binary (tiktoken-go-loader's, zstd-compressed in
// bpe/), so counting never touches the network: a fresh machine with no
// connection counts exactly the same as a connected one.
//
// Chat requests cost more than the text they carry: every message is framed
// by a few control tokens and the reply is primed with a few more. MessageCost
// and Total apply that rule (see their docs) to per-message counts, so callers
// that already know each message's count never tokenize twice.
//
// This package knows nothing about conversations; stages/curate builds its
// per-conversation token cache on top of it.
package tokens
